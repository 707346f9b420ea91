// <tp-moe-view>: the page's MoE block run on the rank workers (session/moe-run.ts): each rank's lanes with
// the all-to-alls' bytes per peer and the expert GEMMs' token rows, the tokens-per-expert-per-rank heat
// map, the straggler, the dropped tokens and the check against one device.
import { LitElement, css, html, nothing, svg, type TemplateResult } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import { moeWorld } from '../../parallel/moe-layout.ts';
import { createLayerPool } from '../../session/pools.ts';
import { moePoolMesh, moeRunErrors, runMoe, type MoeRun, type MoeRunArgs } from '../../session/moe-run.ts';
import { panelStyles } from '../shared/page-style.ts';
import { allToAllBytes, moeHeat, moeSlices, moeStragglerText } from './moe-view-model.ts';
import { moeSteps, type MoeStep } from './moe-steps.ts';

/** Lane height and the drawing's width in px. */
const laneH = 22;
const drawW = 860;

/**
 * `<tp-moe-view .args=${moeRunArgsOf(settings)}>`: runs the MoE block forward and backward on
 * lcm(t, ETP·EP) rank workers whenever `args` change (the latest request wins) and draws what the
 * run measured. `data-state` on the host: idle, running, done, refused or failed.
 */
@customElement('tp-moe-view')
export class TpMoeView extends LitElement {
  static override styles = [
    panelStyles,
    css`
      table.heat {
        width: auto;
        border-collapse: collapse;
        font-size: 13px;
        margin: 6px 0;
      }
      table.heat td,
      table.heat th {
        border: 1px solid #c7d0dc;
        padding: 2px 6px;
        text-align: right;
        min-width: 1.8em;
      }
      table.heat th.owner {
        font-weight: 400;
        color: #445;
      }
      svg text {
        font-size: 11px;
        pointer-events: none;
      }
      .dropped {
        font-weight: 700;
      }
      tr.duplicate th,
      tr.duplicate td {
        outline: 2px dashed #b3261e;
        outline-offset: -2px;
      }
    `,
  ];

  @property({ attribute: false }) args: MoeRunArgs | undefined;
  @state() private run: MoeRun | undefined;
  @state() private error = '';
  @state() private running = false;
  /** The classroom steps, computed when their section is first opened (the float64 block on every token). */
  @state() private steps: readonly MoeStep[] | undefined;
  private asked = '';

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    this.asked = '';
  }

  protected override willUpdate(changed: Map<string, unknown>): void {
    if (!changed.has('args') || !this.args) return;
    const key = JSON.stringify(this.args);
    if (key === this.asked) return;
    this.asked = key;
    this.steps = undefined;
    void this.start(this.args, key);
  }

  private async start(a: MoeRunArgs, key: string): Promise<void> {
    const errors = moeRunErrors(a);
    if (errors.length) {
      this.run = undefined;
      this.error = errors.join(' ');
      this.dataset.state = 'refused';
      return;
    }
    this.running = true;
    this.dataset.state = 'running';
    const pool = await createLayerPool(moeWorld(a.layout), 'auto', 60_000, moePoolMesh(a.layout));
    try {
      const run = await runMoe(pool, a);
      if (key === this.asked) {
        this.run = run;
        this.error = '';
        this.dataset.state = 'done';
      }
    } catch (e) {
      if (key === this.asked) {
        this.error = e instanceof Error ? e.message : String(e);
        this.dataset.state = 'failed';
      }
    }
    if (key === this.asked) this.running = false;
    await pool.dispose();
  }

  protected override render(): TemplateResult {
    const a = this.args;
    if (!a) return html``;
    const r = this.run;
    const l = a.layout;
    const head = html`<h2>Mixture of Experts on the ranks</h2>
      <p class="note">
        E = ${a.config.numMoeExperts} experts, top-${a.config.moeRouterTopk}, EP ${l.ep}, ETP ${l.etp} on
        ${moeWorld(l)} ranks, ${a.tokens} tokens routed by each; ${l.dispatcher} dispatcher${
          a.config.moeExpertCapacityFactor === null
            ? ', dropless'
            : `, capacity factor ${a.config.moeExpertCapacityFactor}`
        }${a.config.routerSkew ? `, router skew ${a.config.routerSkew}` : ''}.
        ${this.running ? html`<strong data-moe="running">running…</strong>` : nothing}
      </p>`;
    if (this.error)
      return html`${head}
        <p class="note" role="alert" data-moe="error">${this.error}</p>`;
    if (!r) return head;
    return html`${head} ${this.renderSummary(r)} ${this.renderLanes(r)} ${this.renderHeat(r)} ${this.renderAllToAll(r)}
    ${this.renderSteps(a)}`;
  }

  /** The classroom steps with real tensors, computed on first opening. */
  private renderSteps(a: MoeRunArgs): TemplateResult {
    return html`<details
      data-moe="steps"
      @toggle=${(e: Event) => {
        if ((e.target as HTMLDetailsElement).open && !this.steps) this.steps = moeSteps(a);
      }}
    >
      <summary><strong>Classroom: the MoE block step by step, with these tokens' real values</strong></summary>
      ${(this.steps ?? []).map(
        (s) =>
          html`<section data-step=${s.id}>
            <h3>${s.title}</h3>
            <p>${s.text}</p>
            <table class="heat">
              <tr>
                ${s.head.map((x) => html`<th>${x}</th>`)}
              </tr>
              ${s.rows.map((row) => html`<tr>${row.map((v) => html`<td>${v}</td>`)}</tr>`)}
            </table>
          </section>`,
      )}
    </details>`;
  }

  private renderSummary(r: MoeRun): TemplateResult {
    const o = r.oracle;
    const sent = r.ranks.reduce((a, q) => a + q.dispatchBytes, 0);
    return html`${
      r.copies > 1
        ? html`<p class="note" role="note" data-moe="m036" data-copies=${r.copies}>
            <strong>M036: each logical token is routed ${r.copies} times.</strong> Without SP the
            ${r.layout.tp} ranks of a TP group hold the same tokens and each routes and dispatches them again: the
            forward dispatch sent ${sent} B where one copy is ${sent / r.copies} B (× ${r.copies}); the duplicate ranks are
            marked in the heat map. Megatron refuses this in training (${r.refusal?.source ?? 'moe_layer.py'},
            ${r.refusal?.error ?? 'ValueError'}: "${r.refusal?.message ?? ''}").
          </p>`
        : nothing
    }
      <p>
        Straggler: <strong data-moe="straggler" data-rank=${r.straggler.rank}>${moeStragglerText(r)}</strong>.
      </p>
      <p>
        Dropped over capacity:
        <strong class="dropped" data-moe="dropped" data-count=${r.dropped}>${r.dropped}</strong> of
        ${r.expertLoad.reduce((a, n) => a + n, 0) + r.dropped} picks${r.dropped ? ' (neither sent nor combined)' : ''} ·
        aux loss ${r.aux.toPrecision(4)} · z-loss ${r.z.toPrecision(4)} ·
        <span data-moe="oracle" data-ok=${String(o.ok)}
          >${
            o.ok
              ? `every rank matches one device within ${o.tolerance} (same routing, output, losses and gradients)`
              : `differs from one device: ${o.failures.join('; ')}`
          }</span
        >
      </p>`;
  }

  /** Each rank's compute and comm lanes: the expert GEMMs with their token rows, the all-to-alls with bytes per peer. */
  private renderLanes(r: MoeRun): TemplateResult {
    const slices = moeSlices(r.trace);
    const end = Math.max(1e-6, ...slices.map((s) => s.t1));
    const ranks = r.ranks.length;
    const x = (t: number): number => 60 + (t / end) * (drawW - 70);
    const y = (rank: number, stream: string): number => rank * 2 * laneH + (stream === 'comm' ? laneH : 0);
    const colour = (op: string, stream: string): string =>
      op.startsWith('moe.experts') ? '#d9822b' : stream === 'comm' ? '#2b6cb0' : '#8aa0b8';
    return html`<h3>Timeline of the MoE block (forward and backward, ${end.toFixed(1)} ms)</h3>
      <svg data-moe="timeline" width=${drawW} height=${ranks * 2 * laneH + 4} role="img" aria-label="MoE timeline">
        ${r.ranks.map(
          (q) =>
            svg`<text x="2" y=${y(q.rank, 'compute') + 15}>rank ${q.rank}</text>
              <text x="2" y=${y(q.rank, 'comm') + 15} fill="#2b6cb0">comm</text>`,
        )}
        ${slices.map((s) => {
          const w = Math.max(1, x(s.t1) - x(s.t0));
          return svg`<g>
            <rect
              data-op=${s.op}
              data-rank=${s.rank}
              x=${x(s.t0)}
              y=${y(s.rank, s.stream) + 2}
              width=${w}
              height=${laneH - 4}
              fill=${colour(s.op, s.stream)}
            >
              <title>${s.title}</title>
            </rect>
            ${w > 60 ? svg`<text x=${x(s.t0) + 2} y=${y(s.rank, s.stream) + 15} fill="#fff">${s.label.slice(0, Math.floor(w / 6))}</text>` : nothing}
          </g>`;
        })}
      </svg>`;
  }

  /** Tokens per expert per rank: rows the ranks whose tokens were routed, columns the experts under their owners. */
  private renderHeat(r: MoeRun): TemplateResult {
    const h = moeHeat(r);
    const cell = (v: number): string => `background: rgba(217, 130, 43, ${(v / h.max).toFixed(3)})`;
    return html`<h3>Tokens per expert per rank (layer 1)</h3>
      <table class="heat" data-moe="heatmap">
        <tr>
          <th>rank \\ expert</th>
          ${h.owners.map((_, e) => html`<th>${e}</th>`)}
          <th>dropped</th>
        </tr>
        <tr>
          <th class="owner">held by rank</th>
          ${h.owners.map((o) => html`<th class="owner">${o.join(',')}</th>`)}
          <th></th>
        </tr>
        ${h.tokens.map(
          (row, q) =>
            html`<tr class=${r.ranks[q]!.duplicateOf === null ? '' : 'duplicate'} data-duplicate-of=${r.ranks[q]!.duplicateOf ?? ''}>
              <th>${q}${r.ranks[q]!.duplicateOf === null ? '' : ` = ${r.ranks[q]!.duplicateOf}'s tokens again`}</th>
              ${row.map((v, e) => html`<td style=${cell(v)} data-rank=${q} data-expert=${e}>${v}</td>`)}
              <td>${r.ranks[q]!.dropped}</td>
            </tr>`,
        )}
        <tr>
          <th>all</th>
          ${r.expertLoad.map((v) => html`<th>${v}</th>`)}
          <th>${r.dropped}</th>
        </tr>
      </table>`;
  }

  /** Bytes each rank sent each rank in the forward dispatch all-to-all (the combine sends them back). */
  private renderAllToAll(r: MoeRun): TemplateResult {
    const n = r.ranks.length;
    const m = allToAllBytes(r.trace, 'moe.dispatch', n);
    return html`<h3>Dispatch all-to-all: bytes from rank (row) to rank (column)</h3>
      <table class="heat" data-moe="alltoall">
        <tr>
          <th>from \\ to</th>
          ${m.map((_, j) => html`<th>${j}</th>`)}
        </tr>
        ${m.map(
          (row, i) =>
            html`<tr>
              <th>${i}</th>
              ${row.map((b, j) => html`<td title=${i === j ? 'kept locally' : ''}>${i === j ? `(${b})` : b}</td>`)}
            </tr>`,
        )}
      </table>`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-moe-view': TpMoeView;
  }
}
