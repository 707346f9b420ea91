// <tp-shapes>: per-rank layout at each boundary of the layer, weight shards, who owns what, per-rank memory.
import { LitElement, css, html, nothing } from 'lit';
import { customElement, property } from 'lit/decorators.js';
import type { PlanAccounting } from '../../accounting/accounting.ts';
import type { LayerPlan } from '../../parallel/plan-types.ts';
import { qkvOutWidth } from '../../parallel/qkv-layout.ts';
import { formatBytes } from '../../core/format.ts';
import { panelStyles } from '../shared/page-style.ts';
import { boundaries, layoutWords, memoryGroups, rangeText, rankRange } from './shapes-model.ts';
import { moeLayerWeights } from '../../parallel/moe-layer.ts';
import { moeWeightRows, planTensorText, type MoePlan } from './moe-plan-model.ts';

const shape = (s: readonly number[]): string => `[${s.join(', ')}]`;

/** Colours of the memory bar parts (parameters, gradients, activations). */
const memColors = { parameters: '#2a6cc4', gradients: '#7aa7e0', activations: '#c98a00' } as const;

/**
 * `<tp-shapes>`: from `plan` and `accounting`, the forward activations at each boundary (symbolic
 * and local shape, replicated vs sequence-sharded vs split vs partial sums), each rank's weight
 * shards and ownership (heads, KV groups, linear_qkv output columns — with groups < t an even slice
 * that is all-gathered —, FFN columns, vocabulary rows, tokens), and per-rank memory: parameters,
 * gradients, activations kept for backward. With `moe` (experts set) the layer runs without the
 * dense MLP and without a vocabulary (moeRequestOf): their boundaries, weights, FFN columns and
 * vocabulary rows are left out, the MoE block's weights listed from the
 * block's plan in their place (its activations stage by stage are the top card's), and the memory,
 * the dense layer's accounting, is not shown.
 */
@customElement('tp-shapes')
export class TpShapes extends LitElement {
  static override styles = [
    panelStyles,
    css`
      .grid {
        display: grid;
        grid-template-columns: repeat(auto-fit, minmax(440px, 1fr));
        gap: 12px 22px;
      }
      .layout-replicated {
        color: #0b2b55;
      }
      .layout-sequence-sharded {
        color: #0a5c25;
        font-weight: 600;
      }
      .layout-partial-sums {
        color: #8a4b00;
        font-weight: 600;
      }
      td.mono,
      td code {
        white-space: nowrap;
      }
      .bar {
        display: flex;
        height: 14px;
        min-width: 120px;
        border: 1px solid #6b7280;
      }
      .bar span {
        display: block;
        height: 100%;
      }
      .key span {
        display: inline-block;
        width: 12px;
        height: 12px;
        margin: 0 4px 0 10px;
        vertical-align: middle;
      }
    `,
  ];

  /** The plan of the run shown. */
  @property({ attribute: false }) plan: LayerPlan | undefined;
  /** Its accounting (memory per rank). */
  @property({ attribute: false }) accounting: PlanAccounting | undefined;
  /** With experts set: the MoE block in place of the dense MLP (moePlan of the page's MoE run). */
  @property({ attribute: false }) moe: MoePlan | undefined;

  protected override render() {
    if (!this.plan || !this.accounting) return html`<p class="note">No plan yet.</p>`;
    return html`${
      this.moe
        ? html`<p class="note" data-shapes="moe">
            With experts set the layer that runs has the MoE block as its MLP and no vocabulary: the dense MLP's
            activations, weights and FFN columns and the vocabulary's are left out, the block's weights listed in their
            place; its activations stage by stage, on each of the ${this.moe.ranks} ranks, are in the top card. The
            memory per rank is the dense layer's accounting, so it is not shown.
          </p>`
        : nothing
    }
      <div class="grid">
        <section>${this.renderBoundaries(this.plan)}</section>
        <section>
          ${this.renderWeights(this.plan, this.accounting)} ${this.moe ? nothing : this.renderMemory(this.accounting)}
        </section>
      </div>`;
  }

  private renderBoundaries(plan: LayerPlan) {
    const t = plan.ranks.length;
    return html`<h2>Activations at each boundary (forward, every rank)</h2>
      <table data-section="boundaries">
        <thead>
          <tr>
            <th>after</th>
            <th>per rank</th>
            <th>local shape</th>
            <th>across ${t} rank${t > 1 ? 's' : ''}</th>
          </tr>
        </thead>
        <tbody>
          ${boundaries(plan, { moeLayer: this.moe !== undefined }).map(
            (b) =>
              html`<tr data-op=${b.op} data-layout=${b.layout}>
                <td>${b.label}</td>
                <td><code>${b.symbolic}</code></td>
                <td class="mono">${shape(b.shape)}</td>
                <td class=${`layout-${b.layout}`}>${layoutWords[b.layout]}</td>
              </tr>`,
          )}
        </tbody>
      </table>`;
  }

  private renderWeights(plan: LayerPlan, acc: PlanAccounting) {
    const c = plan.config;
    const r0 = acc.memory[0];
    const gathered = c.groups < plan.ranks.length;
    const W = qkvOutWidth(c);
    return html`<h2>Weight shards (local shapes)</h2>
      <table data-section="weights">
        <thead>
          <tr>
            <th>weight</th>
            <th>rank 0 holds</th>
            <th class="num">bytes</th>
            <th></th>
          </tr>
        </thead>
        <tbody>
          ${(
            this.moe
              ? r0.parameters.filter((p) => moeLayerWeights({ ...c, vocab: 0 }).includes(p.weight))
              : r0.parameters
          ).map(
            (p) =>
              html`<tr data-weight=${p.name}>
                <td><code>${p.name}</code></td>
                <td class="mono">${shape(p.shape)}</td>
                <td class="num">${formatBytes(p.bytes)}</td>
                <td>${p.replicated || (plan.ranks.length === 1 && (this.moe?.ranks ?? 1) > 1) ? 'replicated' : plan.ranks.length > 1 ? 'shard' : 'whole'}</td>
              </tr>`,
          )}
          ${
            this.moe
              ? moeWeightRows(this.moe).map(
                  (w) =>
                    html`<tr data-weight=${`moe.${w.stage}.${w.tensor.name}`}>
                      <td><code>${w.stage} ${w.tensor.name}</code></td>
                      <td class="mono">${planTensorText(w.tensor)}</td>
                      <td class="num">${formatBytes(w.bytes)}</td>
                      <td>${w.holds}</td>
                    </tr>`,
                )
              : nothing
          }
        </tbody>
      </table>
      ${this.moe ? this.renderMoeOwnership(plan, this.moe) : this.renderOwnership(plan)}
      ${
        gathered
          ? html`<p class="note">
              ${c.groups} KV group${c.groups > 1 ? 's' : ''} &lt; t = ${plan.ranks.length} (Megatron-Core, core_v0.16
              on): linear_qkv's ${W} output columns, laid out per group as [q heads | k | v], are split evenly
              (${W / plan.ranks.length} per rank, each column owned by one rank) and all-gathered along the last dim
              before attention; rank r then reads KV group ⌊r / ${plan.ranks.length / c.groups}⌋ and its own query
              heads. In backward the gathered gradient is reduce-scattered back to the slices.
            </p>`
          : nothing
      }`;
  }

  /** The dense plan's t ranks: heads, KV groups, qkv columns, FFN columns, vocabulary rows, tokens. */
  private renderOwnership(plan: LayerPlan) {
    const c = plan.config;
    return html`<h3>Who owns what</h3>
      <table data-section="ownership">
        <thead>
          <tr>
            <th>rank</th>
            <th>query heads</th>
            <th>KV groups</th>
            <th>linear_qkv columns</th>
            <th>FFN columns</th>
            ${c.vocab > 0 ? html`<th>vocab rows</th>` : nothing}
            <th>tokens</th>
          </tr>
        </thead>
        <tbody>
          ${plan.ranks.map(
            (o) =>
              html`<tr>
                <td>${o.rank}</td>
                <td>${rangeText(o.heads)}</td>
                <td>${o.kvGroups.join(', ')}</td>
                <td>${rangeText(o.qkvCols)}</td>
                <td>${rangeText(o.ffn)}</td>
                ${c.vocab > 0 ? html`<td>${rangeText(o.vocab)}</td>` : nothing}
                <td>${rangeText(o.tokens)}</td>
              </tr>`,
          )}
        </tbody>
      </table>`;
  }

  /**
   * The MoE run's N = lcm(t, ETP·EP) ranks (moePlan's owners): each rank's attention share — the
   * dense plan's TP rank it sits at (heads, KV groups, qkv columns, SP shard) of its DP replica's
   * micro-batch — and its experts (EP rank's L local experts, ETP rank's f′ columns of each).
   */
  private renderMoeOwnership(plan: LayerPlan, moe: MoePlan) {
    const d = moe.degrees;
    return html`<h3>Who owns what (the MoE run's ${moe.ranks} rank${moe.ranks > 1 ? 's' : ''})</h3>
      <table data-section="ownership" data-moe-ranks=${moe.ranks}>
        <thead>
          <tr>
            <th>rank</th>
            <th>attention TP · DP</th>
            <th>query heads</th>
            <th>KV groups</th>
            <th>linear_qkv columns</th>
            <th>tokens${d.dp > 1 ? ' (its micro-batch)' : ''}</th>
            <th>experts (EP ${d.ep}${d.edp > 1 ? ` · EDP ${d.edp}` : ''})</th>
            ${d.etp > 1 ? html`<th>expert FFN columns (ETP ${d.etp})</th>` : nothing}
          </tr>
        </thead>
        <tbody>
          ${moe.owners.map((o) => {
            const a = plan.ranks[o.tp]!;
            return html`<tr data-rank=${o.rank}>
              <td>${o.rank}</td>
              <td>TP ${o.tp} · DP ${o.dp}</td>
              <td>${rangeText(a.heads)}</td>
              <td>${a.kvGroups.join(', ')}</td>
              <td>${rangeText(a.qkvCols)}</td>
              <td>${rangeText(a.tokens)}${d.dp > 1 ? ` of batch ${o.dp}` : ''}</td>
              <td data-experts>${rangeText(o.experts)}${d.edp > 1 ? ` (EDP ${o.edp})` : ''}</td>
              ${d.etp > 1 ? html`<td>${rangeText(o.expertFfn)}</td>` : nothing}
            </tr>`;
          })}
        </tbody>
      </table>`;
  }

  private renderMemory(acc: PlanAccounting) {
    const max = Math.max(...acc.memory.map((m) => m.totalBytes), 1);
    const pct = (b: number): string => `${(100 * b) / max}%`;
    return html`<h3>Memory per rank (float32)</h3>
      <table data-section="memory">
        <thead>
          <tr>
            <th>rank</th>
            <th class="num">parameters</th>
            <th class="num">gradients</th>
            <th class="num">activations</th>
            <th class="num">total</th>
            <th></th>
          </tr>
        </thead>
        <tbody>
          ${memoryGroups(acc).map(
            (g) =>
              html`<tr>
                <td>${rankRange(g.ranks)}</td>
                <td class="num">${formatBytes(g.memory.parameterBytes)}</td>
                <td class="num">${formatBytes(g.memory.gradientBytes)}</td>
                <td class="num">${formatBytes(g.memory.activationBytes)}</td>
                <td class="num"><strong>${formatBytes(g.memory.totalBytes)}</strong></td>
                <td>
                  <div class="bar" role="img" aria-label="parameters, gradients, activations">
                    <span style="width:${pct(g.memory.parameterBytes)};background:${memColors.parameters}"></span>
                    <span style="width:${pct(g.memory.gradientBytes)};background:${memColors.gradients}"></span>
                    <span style="width:${pct(g.memory.activationBytes)};background:${memColors.activations}"></span>
                  </div>
                </td>
              </tr>`,
          )}
        </tbody>
      </table>
      <p class="key note">
        <span style="background:${memColors.parameters}"></span>parameters<span
          style="background:${memColors.gradients}"
        ></span
        >gradients<span style="background:${memColors.activations}"></span>activations kept for backward
      </p>`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-shapes': TpShapes;
  }
}
