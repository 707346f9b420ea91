// <tp-moe-view>: what the page's MoE run on the rank workers (shell/moe-runs.ts: the layer with its MoE block)
// measured of the block: the straggler, the tokens-per-expert-per-rank heat map, the dropped tokens, the checks
// against one device and the dispatch matrix. Its lanes are the page's <tp-timeline>; the classroom steps through it.
import { LitElement, css, html, nothing, type TemplateResult } from 'lit';
import { customElement, property } from 'lit/decorators.js';
import { moeWorld } from '../../parallel/moe-layout.ts';
import type { MoeRun, MoeRunArgs } from '../../session/moe-run.ts';
import type { MoeLayerRun } from '../../session/moe-layer-run.ts';
import { panelStyles } from '../shared/page-style.ts';
import { allToAllBytes, moeHeat, moeStragglerText } from './moe-view-model.ts';

/** What the card is showing: nothing asked, the run in flight, its result, or why there is none. */
export type MoeViewState = 'idle' | 'running' | 'done' | 'refused' | 'failed';

/**
 * `<tp-moe-view .args=${a} .run=${r} state="done">`: draws the page's MoE run (the shell runs it:
 * shell/moe-runs.ts); `state` is reflected as `data-state` on the host, `error` is shown when
 * refused or failed, `classroom` links to the classroom view's MoE steps.
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
  @property({ attribute: false }) run: MoeRun | MoeLayerRun | undefined;
  @property() state: MoeViewState = 'idle';
  @property() error = '';
  /** The page's link to the classroom view (its MoE steps), or '' for none. */
  @property() classroom = '';

  protected override willUpdate(): void {
    this.dataset.state = this.state;
  }

  protected override render(): TemplateResult {
    const a = this.args;
    if (!a) return html``;
    const r = this.state === 'refused' || this.state === 'failed' ? undefined : this.run;
    const l = a.layout;
    const head = html`<h2>Mixture of Experts on the ranks</h2>
      <p class="note">
        E = ${a.config.numMoeExperts} experts, top-${a.config.moeRouterTopk}, EP ${l.ep}, ETP ${l.etp} on
        ${moeWorld(l)} ranks, ${a.tokens} tokens routed by each; ${l.dispatcher} dispatcher${
          a.config.moeExpertCapacityFactor === null
            ? ', dropless'
            : `, capacity factor ${a.config.moeExpertCapacityFactor}`
        }${a.config.routerSkew ? `, router skew ${a.config.routerSkew}` : ''}.
        ${this.state === 'running' ? html`<strong data-moe="running">running…</strong>` : nothing}
      </p>`;
    if (this.state === 'refused' || this.state === 'failed')
      return html`${head}
        <p class="note" role="alert" data-moe="error">${this.error}</p>`;
    if (!r) return head;
    return html`${head} ${this.renderSummary(r)} ${this.renderHeat(r)} ${this.renderAllToAll(r)}
    ${
      this.classroom
        ? html`<p class="note">
            Step by step, with these tokens' values:
            <a data-moe="classroom-link" href=${this.classroom}>the MoE steps in the classroom view</a>.
          </p>`
        : nothing
    }`;
  }

  private renderSummary(r: MoeRun | MoeLayerRun): TemplateResult {
    const o = r.oracle;
    const layer =
      'layerOracle' in r
        ? html`<span data-moe="layer-oracle" data-ok=${String(r.layerOracle.ok)}
            >${
              r.layerOracle.ok
                ? `the whole layer (output, input gradient, the block's input, the attention's gradients) matches one device within ${r.layerOracle.tolerance}`
                : `the layer differs from one device: ${r.layerOracle.failures.join('; ')}`
            }</span
          >`
        : html`the block ran alone (the M036 demonstration: the layer refuses t > 1 without SP)`;
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
        · ${layer}
      </p>`;
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
