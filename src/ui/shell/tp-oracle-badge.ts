// <tp-oracle-badge>: the run's worst error against TP=1, pass/fail, the per-tensor table a click away.
import { LitElement, css, html, nothing, type TemplateResult } from 'lit';
import { customElement, property } from 'lit/decorators.js';
import type { OracleEntry, OracleReport } from '../../parallel/oracle.ts';
import { panelStyles } from '../shared/page-style.ts';
import { checkRatio, type MoeOracleVerdict } from './moe-oracle-verdict.ts';

const sci = (v: number): string => (Number.isFinite(v) ? v.toExponential(2) : String(v));

/** Worst error as a fraction of its tolerance: < 1 passes. */
const ratio = (e: OracleEntry): number => (e.tol > 0 ? e.maxAbs / e.tol : Infinity);

/** A row of a verdict table: what was checked, its max |error|, the columns between (`more`), its tolerance and error / tol. */
interface VerdictRow {
  readonly name: TemplateResult | string;
  /** `data-tensor` of the row (the dense oracle's tensors). */
  readonly tensor?: string;
  readonly maxAbs: number;
  readonly more: readonly number[];
  readonly tol: number;
  readonly ratio: number;
  readonly pass: boolean;
}

/**
 * Every check behind a click (the dense oracle's tensors, the MoE run's checks): columns `first`,
 * max |error|, `moreHeads`, tolerance, error / tol and the verdict; a failing row is `tr.fail`.
 */
function verdictDetails(
  summary: string,
  first: string,
  moreHeads: readonly string[],
  rows: readonly VerdictRow[],
): TemplateResult {
  return html`<details>
    <summary>${summary}</summary>
    <table>
      <thead>
        <tr>
          <th>${first}</th>
          <th class="num">max |error|</th>
          ${moreHeads.map((h) => html`<th class="num">${h}</th>`)}
          <th class="num">tolerance</th>
          <th class="num">error / tol</th>
          <th>verdict</th>
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          (r) =>
            html`<tr class=${r.pass ? '' : 'fail'} data-tensor=${r.tensor ?? nothing}>
              <td>${r.name}</td>
              <td class="num">${sci(r.maxAbs)}</td>
              ${r.more.map((x) => html`<td class="num">${sci(x)}</td>`)}
              <td class="num">${sci(r.tol)}</td>
              <td class="num">${r.ratio.toFixed(3)}</td>
              <td>${r.pass ? 'pass' : 'FAIL'}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </details>`;
}

/**
 * `<tp-oracle-badge>`: pass/fail of `oracle` (TP=t vs the TP=1 run on the same adapter) with the
 * worst tensor, the CPU twins' verdict when `cpuOracle` is set, and each tensor's max |error|,
 * tolerance and reference max behind a click; with experts set, `moe`: the MoE run's own check against
 * one device, in the same words, its every check behind the click. `data-pass` on the badge is "true", "false",
 * "checking" (the rank workers are running: `checking`) or "none" (nothing ran: `reason` says why).
 */
@customElement('tp-oracle-badge')
export class TpOracleBadge extends LitElement {
  static override styles = [
    panelStyles,
    css`
      .badge {
        display: inline-flex;
        align-items: center;
        gap: 10px;
        padding: 6px 12px;
        border-radius: 8px;
        font-size: 16px;
        font-weight: 700;
        border: 2px solid;
      }
      .badge[data-pass='true'] {
        background: #e6f4ea;
        color: #0a5c25;
        border-color: #0a5c25;
      }
      .badge[data-pass='false'] {
        background: #fdecee;
        color: #a3000f;
        border-color: #a3000f;
      }
      .badge[data-pass='none'] {
        background: #f3f4f6;
        color: #374151;
        border-color: #6b7280;
      }
      .badge[data-pass='checking'] {
        background: #e8f0fb;
        color: #0b2b55;
        border-color: #2a6cc4;
      }
      .badge[data-pass='checking']::before {
        content: '';
        width: 12px;
        height: 12px;
        border: 3px solid #2a6cc4;
        border-top-color: transparent;
        border-radius: 50%;
        animation: spin 0.8s linear infinite;
      }
      @keyframes spin {
        to {
          transform: rotate(360deg);
        }
      }
      .detail {
        font-weight: 400;
        font-size: 14px;
      }
      details {
        margin-top: 4px;
      }
      .cpu {
        margin: 4px 0 0;
        font-size: 14px;
      }
      summary {
        cursor: pointer;
        color: #0b2b55;
        font-weight: 600;
      }
      tr.fail td {
        color: #a3000f;
        font-weight: 600;
      }
    `,
  ];

  /** TP=t against TP=1 on this adapter. */
  @property({ attribute: false }) oracle: OracleReport | undefined;
  /** TP=t against the CPU twins (small configurations only). */
  @property({ attribute: false }) cpuOracle: OracleReport | undefined;
  /** Why the CPU twins did not run, when they did not. */
  @property() cpuSkipped = '';
  /** The TP degree checked, for the wording. */
  @property({ type: Number }) tp = 1;
  /** Why there is no verdict (e.g. no WebGPU: nothing ran). */
  @property() reason = '';
  /** With experts set: the MoE run's verdict against one device (the dense `oracle` is then unset). */
  @property({ attribute: false }) moe: MoeOracleVerdict | undefined;
  /** The rank workers are checking right now (no oracle yet): says so, with a spinner, instead of "no oracle". */
  @property({ type: Boolean }) checking = false;

  protected override render() {
    const o = this.oracle;
    if (!o && this.checking)
      return html`<div class="badge" data-pass="checking" aria-busy="true">
        checking on ${this.tp} rank worker${this.tp > 1 ? 's' : ''}…<span class="detail">${this.reason}</span>
      </div>`;
    if (!o && this.moe) return this.renderMoe(this.moe);
    if (!o) {
      return html`<div class="badge" data-pass="none">
        no oracle<span class="detail">${this.reason || 'nothing has run yet'}</span>
      </div>`;
    }
    const w = o.worst;
    return html`
      <div
        class="badge"
        data-pass=${String(o.pass)}
        title="max |TP=${this.tp} − TP=1| over every tensor, against 16·ε·(K+1)·max|ref|"
      >
        ${o.pass ? '✓ matches TP=1' : '✗ differs from TP=1'}
        <span class="detail">worst ${w.tensor}: ${sci(w.maxAbs)} (tolerance ${sci(w.tol)})</span>
      </div>
      ${
        this.cpuOracle
          ? html`<p class="cpu" data-cpu-pass=${String(this.cpuOracle.pass)}>
              CPU twins (float64 accumulation): ${this.cpuOracle.pass ? 'match' : 'differ'} — worst
              ${this.cpuOracle.worst.tensor} ${sci(this.cpuOracle.worst.maxAbs)}
            </p>`
          : this.cpuSkipped
            ? html`<p class="cpu" data-cpu-skipped>${this.cpuSkipped}</p>`
            : nothing
      }
      ${verdictDetails(
        `every tensor (${o.entries.length})`,
        'tensor',
        ['max rel', 'max |ref|'],
        o.entries.map((e) => ({
          name: html`<code>${e.tensor}</code>`,
          tensor: e.tensor,
          maxAbs: e.maxAbs,
          more: [e.maxRel, e.refMax],
          tol: e.tol,
          ratio: ratio(e),
          pass: e.pass,
        })),
      )}
    `;
  }

  /** The MoE run's verdict in the dense badge's words: one device in place of TP=1, each check a row. */
  private renderMoe(v: MoeOracleVerdict) {
    const w = v.worst;
    const what = v.scope === 'layer' ? 'the layer with its MoE block' : 'the MoE block alone (M036)';
    return html`
      <div
        class="badge"
        data-pass=${String(v.pass)}
        data-moe-oracle=${v.scope}
        title="max |ranks − one device in float64| of ${what}, over every check, against its tolerance"
      >
        ${v.pass ? '✓ matches one device' : '✗ differs from one device'}
        <span class="detail" data-ratio=${v.ratio}
          >worst ${w.what}: ${sci(w.worst)} (tolerance ${sci(w.tolerance)}, error / tol ${v.ratio.toFixed(3)})</span
        >
      </div>
      ${
        v.pass
          ? nothing
          : html`<p class="cpu" data-moe-failures>${v.failures.slice(0, 3).join('; ')}${v.failures.length > 3 ? ` (and ${v.failures.length - 3} more)` : ''}</p>`
      }
      ${verdictDetails(
        `every check of ${what} (${v.checks.length})`,
        'check',
        [],
        v.checks.map((c) => ({
          name: c.what,
          maxAbs: c.worst,
          more: [],
          tol: c.tolerance,
          ratio: checkRatio(c),
          pass: c.ok,
        })),
      )}
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-oracle-badge': TpOracleBadge;
  }
}
