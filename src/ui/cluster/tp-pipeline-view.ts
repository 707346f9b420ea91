// <tp-pipeline-view>: the projected step's pipeline schedule (stages × time) and, on a click, one stage's TP lanes.
import { LitElement, css, html, nothing, type PropertyValues } from 'lit';
import { customElement, property, query, state } from 'lit/decorators.js';
import type { StepProjection } from '../../projection/step/cluster-projection.ts';
import { holdsEmbedding, holdsOutput } from '../../mesh/pipeline-split.ts';
import { panelStyles } from '../shared/page-style.ts';
import { formatMs } from '../../core/format.ts';
import '../timeline/tp-timeline.ts';
import { blockColor, drawPipelineChart, maxArrowBlocks } from './pipeline-chart.ts';
import { observeWidth } from '../shared/width-observer.ts';

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

/**
 * `<tp-pipeline-view>`: the simulated schedule of `step` (src/projection/pipeline/pipeline-schedule.ts):
 * one row per stage, a block per forward or backward of a micro-batch's model chunk (m·v of each
 * per stage), the idle time hatched (the bubble; its share of the busiest stage is the
 * projection's `bubbleShare`), arrows for the p2p sends between stages. Clicking a stage (its row
 * or its button) shows that stage's TP lanes below: one micro-batch of its layer on its t ranks
 * (with the embedding or the output layer and loss where the stage holds them).
 */
@customElement('tp-pipeline-view')
export class TpPipelineView extends LitElement {
  static override styles = [
    panelStyles,
    css`
      svg.pipeline {
        display: block;
        max-width: none;
      }
      .legend {
        display: flex;
        flex-wrap: wrap;
        gap: 4px 16px;
        font-size: 13px;
        margin: 4px 0;
      }
      .legend i {
        display: inline-block;
        width: 18px;
        height: 12px;
        margin-right: 5px;
        vertical-align: -1px;
      }
      .stages button[aria-pressed='true'] {
        background: #fff6d6;
        font-weight: 600;
      }
    `,
  ];

  /** The projected step whose schedule is drawn. */
  @property({ attribute: false }) step: StepProjection | undefined;
  /** The stage whose TP lanes are shown (none until one is clicked). */
  @state() private stage: number | undefined;
  @query('svg.pipeline') private svgEl: SVGSVGElement | undefined;
  private width = 0;
  private observer: ResizeObserver | undefined;

  override connectedCallback(): void {
    super.connectedCallback();
    this.observer = observeWidth(
      this,
      () => this.width,
      (w) => {
        this.width = w;
        this.draw();
      },
    );
  }

  override disconnectedCallback(): void {
    this.observer?.disconnect();
    super.disconnectedCallback();
  }

  protected override willUpdate(changed: PropertyValues<this>): void {
    if (changed.has('step') && this.stage !== undefined && this.stage >= (this.step?.degrees.pp ?? 0))
      this.stage = undefined;
  }

  protected override updated(): void {
    this.draw();
  }

  private choose(stage: number): void {
    this.stage = this.stage === stage ? undefined : stage;
  }

  private draw(): void {
    const run = this.step?.pipeline;
    if (!run || !this.svgEl) return;
    const width = Math.max(480, this.width || Math.round(this.getBoundingClientRect().width));
    drawPipelineChart(this.svgEl, { run, width, selected: this.stage, onStage: (i) => this.choose(i) });
  }

  private lanes(step: StepProjection, stage: number) {
    const { split } = step;
    const ends = split.layers[stage]!.map((_, c) => holdsEmbedding(stage, c) || holdsOutput(split, stage, c));
    const withEnds = ends.some(Boolean);
    const layers = split.layers[stage]!.reduce((a, n) => a + n, 0);
    return html`<h3 data-stage-lanes=${stage}>Stage ${stage}: its ${step.degrees.tp} TP lanes</h3>
      <p class="note">
        One micro-batch of ${withEnds ? 'a layer with the embedding, output layer and loss' : 'one layer'} on the
        stage's t = ${step.degrees.tp} ranks (the stage runs ${layers} layer${layers === 1 ? '' : 's'}
        ${split.v > 1 ? `in ${split.v} chunks ` : ''}per micro-batch); projected, not measured.
      </p>
      <tp-timeline
        .timeline=${withEnds ? step.full : step.block}
        phase="both"
        caption=${`Stage ${stage} of ${step.degrees.pp}: compute and TP communication per rank`}
      ></tp-timeline>`;
  }

  protected override render() {
    const step = this.step;
    if (!step) return nothing;
    const run = step.pipeline;
    const { pp, vpp, tp } = step.degrees;
    const blocks = run.ops.reduce((a, o) => a + o.length, 0);
    const chunks = Array.from({ length: vpp }, (_, c) => c);
    return html`<h3>Pipeline schedule: t = ${tp}, p = ${pp}, v = ${vpp}, m = ${run.m}</h3>
      <p class="note" data-pipeline-caption>
        ${vpp > 1 ? "Megatron's interleaved schedule" : '1F1B'} simulated op by op; span
        ${formatMs(run.spanMs)}. Bubble (idle share of the busiest stage):
        <strong data-bubble-share=${run.bubbleShare}>${pct(run.bubbleShare)}</strong>
        ${vpp > 1 ? `(≈ (p−1)/(v·m+p−1) with equal stages)` : '(≈ (p−1)/(m+p−1) with equal stages)'}; p2p sends per step:
        ${run.p2pSends}. Click a stage for its TP lanes.
      </p>
      <div class="legend">
        ${chunks.map(
          (c) =>
            html`<span><i style="background:${blockColor('forward', c, vpp)}"></i>forward${vpp > 1 ? `, chunk ${c}` : ''}</span>`,
        )}
        ${chunks.map(
          (c) =>
            html`<span><i style="background:${blockColor('backward', c, vpp)}"></i>backward${vpp > 1 ? `, chunk ${c}` : ''}</span>`,
        )}
        <span><i style="background:repeating-linear-gradient(135deg,#9aa3ad 0 2px,#fff 2px 6px)"></i>idle (bubble)</span>
        <span>→ p2p send of the activation or its gradient${blocks > maxArrowBlocks ? ` (arrows left out above ${maxArrowBlocks} blocks)` : ''}</span>
      </div>
      <svg class="pipeline" data-pipeline></svg>
      <p class="stages">
        TP lanes of
        ${Array.from(
          { length: pp },
          (_, i) =>
            html`<button
              type="button"
              data-stage-button=${i}
              aria-pressed=${String(this.stage === i)}
              @click=${() => this.choose(i)}
            >
              stage ${i}
            </button> `,
        )}
      </p>
      ${this.stage !== undefined ? this.lanes(step, this.stage) : nothing}`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-pipeline-view': TpPipelineView;
  }
}
