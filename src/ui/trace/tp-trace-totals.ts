// <tp-trace-totals>: the tables of a measured job — per rank, per collective, per ProfilerStep.
import { LitElement, html, nothing } from 'lit';
import { customElement, property } from 'lit/decorators.js';
import type { MeasuredTrace } from '../../kineto/kineto-types.ts';
import type { MeasuredAnalysis, RankWindow } from '../../kineto/measured-analysis.ts';
import { ncclName } from '../shared/measured-format.ts';
import { panelStyles } from '../shared/page-style.ts';
import { formatBytes, formatMs } from '../../core/format.ts';

const pct = (x: number | null): string => (x === null ? '—' : `${(100 * x).toFixed(1)}%`);

/**
 * `<tp-trace-totals>`: per-rank totals (rows `tr[data-rank]` with `data-exposed-ms`), per-collective
 * totals over all ranks, and per step the slowest rank and the straggler.
 */
@customElement('tp-trace-totals')
export class TpTraceTotals extends LitElement {
  static override styles = panelStyles;

  @property({ attribute: false }) trace: MeasuredTrace | undefined;
  @property({ attribute: false }) analysis: MeasuredAnalysis | undefined;

  private rankRow(w: RankWindow) {
    const r = this.trace?.ranks.find((x) => x.rank === w.rank);
    return html`<tr
      data-rank=${w.rank}
      data-exposed-ms=${w.exposedMs}
      data-comm-ms=${w.commMs}
      data-compute-ms=${w.computeMs}
    >
      <td>${w.rank}</td>
      <td>${r?.file ?? ''}</td>
      <td class="num">${formatMs(w.t1 - w.t0)}</td>
      <td class="num">${formatMs(w.computeMs)}</td>
      <td class="num">${formatMs(w.commMs)}</td>
      <td class="num"><strong>${formatMs(w.exposedMs)}</strong></td>
      <td class="num">${pct(w.overlap)}</td>
      <td class="num">${formatMs(w.memoryMs)}</td>
      <td class="num">${w.kernels}</td>
    </tr>`;
  }

  protected override render() {
    const a = this.analysis;
    if (!a) return nothing;
    return html`
      <h3>Per rank, whole trace</h3>
      <table data-table="ranks">
        <thead>
          <tr>
            <th>rank</th>
            <th>file</th>
            <th class="num">GPU span</th>
            <th class="num">compute</th>
            <th class="num">comm (NCCL)</th>
            <th class="num">exposed</th>
            <th class="num">overlap</th>
            <th class="num">memcpy/memset</th>
            <th class="num">kernels</th>
          </tr>
        </thead>
        <tbody>
          ${a.ranks.map((w) => this.rankRow(w))}
        </tbody>
      </table>
      <p class="note">
        exposed = |union(NCCL kernels) − union(compute kernels)| on the rank's GPU (the playground's own definition);
        overlap = 1 − exposed / comm. An NCCL kernel's time includes waiting for its slowest peer. Copies count as
        neither.
      </p>
      <h3>Per collective, all ranks</h3>
      <table data-table="collectives">
        <thead>
          <tr>
            <th>collective</th>
            <th>group</th>
            <th class="num">calls</th>
            <th class="num">Σ time</th>
            <th class="num">Σ exposed</th>
            <th class="num">Σ bytes</th>
          </tr>
        </thead>
        <tbody>
          ${a.collectives.map(
            (c) =>
              html`<tr data-collective=${c.collective}>
                <td>${ncclName(c.collective)}</td>
                <td>${c.group || '—'}</td>
                <td class="num">${c.count}</td>
                <td class="num">${formatMs(c.ms)}</td>
                <td class="num">${formatMs(c.exposedMs)}</td>
                <td class="num">${c.bytes ? formatBytes(c.bytes) : '—'}</td>
              </tr>`,
          )}
        </tbody>
      </table>
      ${
        a.steps.length
          ? html`<h3>Per ProfilerStep</h3>
              <table data-table="steps">
                <thead>
                  <tr>
                    <th>step</th>
                    <th>slowest rank (longest GPU span)</th>
                    <th>straggler (last into its collectives)</th>
                    ${a.ranks.map((r) => html`<th class="num">exposed, rank ${r.rank}</th>`)}
                  </tr>
                </thead>
                <tbody>
                  ${a.steps.map(
                    (s) =>
                      html`<tr data-step=${s.step} data-slowest=${s.slowestRank} data-straggler=${s.straggler ?? 'none'}>
                        <td>#${s.step}</td>
                        <td>rank ${s.slowestRank} · ${formatMs(s.spanMs)}</td>
                        <td>
                          ${
                            s.straggler === null
                              ? 'none: no rank waited inside a collective'
                              : `rank ${s.straggler} · the others waited ${formatMs(s.stragglerCausedMs)} for it`
                          }
                        </td>
                        ${a.ranks.map((r) => {
                          const w = s.ranks.find((x) => x.rank === r.rank);
                          return html`<td class="num">${w ? formatMs(w.exposedMs) : '—'}</td>`;
                        })}
                      </tr>`,
                  )}
                </tbody>
              </table>`
          : html`<p class="note">No ProfilerStep#N annotations: the whole trace is one window.</p>`
      }
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-trace-totals': TpTraceTotals;
  }
}
