// <tp-pipeline-view>: the projected step's pipeline schedule (stages × time) and, on a click, one stage's TP lanes.
import { LitElement, css, html, nothing, type PropertyValues, type TemplateResult } from 'lit';
import { customElement, property, query, state } from 'lit/decorators.js';
import type { StepProjection } from '../../projection/step/cluster-projection.ts';
import { holdsEmbedding, holdsOutput } from '../../mesh/pipeline-split.ts';
import { panelStyles } from '../shared/page-style.ts';
import { formatMs } from '../../core/format.ts';
import '../timeline/tp-timeline.ts';
import {
  blockColor,
  drawPipelineChart,
  drawStageMemory,
  maxArrowBlocks,
  stageMemoryColor,
  syncColor,
  tpCommColor,
} from './pipeline-chart.ts';
import {
  measuredChart,
  projectedChart,
  stageClassLanes,
  stageMemoryLanes,
  type MeasuredPipeline,
  type PipelineChartData,
} from '../../session/pipeline-lanes.ts';
import type { PipelineRunResult } from '../../session/pipeline-run.ts';
import { observeWidth } from '../shared/width-observer.ts';
import { drawStageClasses, stageClassStyle } from './stage-class-chart.ts';
import { stageMemoryClasses } from '../../mesh/pipeline-memory.ts';

/** The lanes' view of a run's result. */
const measuredPipeline = (r: PipelineRunResult): MeasuredPipeline => ({
  p: r.model.p,
  v: r.model.v,
  places: r.places,
  spans: r.outputs.map((o) => o.spans),
  trace: r.trace,
});

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

/**
 * `<tp-pipeline-view>`: a pipeline schedule, one row per stage (and replica), a block per forward
 * or backward of a micro-batch's model chunk (m·v of each per stage; ZB-H1's weight passes too),
 * the idle time hatched (the bubble), arrows for the p2p messages between stages. Either the
 * simulated schedule of `step` (src/projection/pipeline/pipeline-schedule.ts; its bubble is the
 * projection's `bubbleShare`), or, with `measured`, the step the rank workers ran
 * (session/pipeline-run.ts), its DP syncs and its bubble beside the projected one of the same layout.
 * Clicking a stage (its row or its button) shows that stage's TP lanes: projected, one micro-batch
 * of its layer on its t ranks below the chart; measured, each TP rank's own lane in the chart.
 */
@customElement('tp-pipeline-view')
export class TpPipelineView extends LitElement {
  static override styles = [
    panelStyles,
    css`
      svg.pipeline,
      svg.memory,
      svg.classes {
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
  /** The step the ranks ran, drawn instead of `step` when set. */
  @property({ attribute: false }) measured: PipelineRunResult | undefined;
  /** The stage whose TP lanes are shown (none until one is clicked). */
  @state() private stage: number | undefined;
  @query('svg.pipeline') private svgEl: SVGSVGElement | undefined;
  @query('svg.memory') private memoryEl: SVGSVGElement | undefined;
  @query('svg.classes') private classesEl: SVGSVGElement | undefined;
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
    if ((changed.has('step') || changed.has('measured')) && this.stage !== undefined && this.stage >= this.stages())
      this.stage = undefined;
  }

  protected override updated(): void {
    this.draw();
  }

  private choose(stage: number): void {
    this.stage = this.stage === stage ? undefined : stage;
  }

  private stages(): number {
    return this.measured?.model.p ?? this.step?.degrees.pp ?? 0;
  }

  private chart(): PipelineChartData | undefined {
    const r = this.measured;
    if (r) return measuredChart(measuredPipeline(r), this.stage);
    return this.step && projectedChart(this.step.pipeline);
  }

  private draw(): void {
    const data = this.chart();
    if (!data || !this.svgEl) return;
    const width = Math.max(480, this.width || Math.round(this.getBoundingClientRect().width));
    const r = this.measured;
    if (r && this.memoryEl) drawStageMemory(this.memoryEl, stageMemoryLanes(measuredPipeline(r)), data.spanMs, width);
    if (r && this.classesEl)
      drawStageClasses(this.classesEl, stageClassLanes(measuredPipeline(r), r.memoryClasses), data.spanMs, width);
    drawPipelineChart(this.svgEl, {
      data,
      width,
      selected: this.stage,
      onStage: (i) => this.choose(i),
    });
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

  private legend(v: number, weight: boolean, sync: boolean, blocks: number, comm = false): TemplateResult {
    const chunks = Array.from({ length: v }, (_, c) => c);
    const item = (pass: 'forward' | 'backward' | 'weight', words: string) =>
      chunks.map(
        (c) =>
          html`<span><i style="background:${blockColor(pass, c, v)}"></i>${words}${v > 1 ? `, chunk ${c}` : ''}</span>`,
      );
    return html`<div class="legend">
      ${item('forward', 'forward')} ${item('backward', weight ? 'backward, input gradient (B)' : 'backward')}
      ${weight ? item('weight', 'weight gradients (W)') : nothing}
      ${sync ? html`<span><i style="background:${syncColor}"></i>DP gradient sync</span>` : nothing}
      ${comm ? html`<span><i style="background:${tpCommColor};height:4px"></i>TP collective (the opened stage's lanes)</span>` : nothing}
      <span><i style="background:repeating-linear-gradient(135deg,#9aa3ad 0 2px,#fff 2px 6px)"></i>idle (bubble)</span>
      <span>→ p2p send of the activation or its gradient${blocks > maxArrowBlocks ? ` (arrows left out above ${maxArrowBlocks} blocks)` : ''}</span>
    </div>`;
  }

  private stageButtons(pp: number): TemplateResult {
    return html`<p class="stages">
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
    </p>`;
  }

  private renderMeasured(r: PipelineRunResult): TemplateResult {
    const { p, v, m, schedule } = r.model;
    const dp = Math.max(...r.places.map((c) => c.dp)) + 1;
    const blocks = r.outputs.reduce((a, o) => a + o.spans.length, 0);
    const projected = r.projected.simulated?.bubbleShare;
    return html`<h3>
        Pipeline on the ranks: t = ${r.model.layer.tp}, p = ${p}, v = ${v}, d = ${dp}, m = ${m}, ${schedule}${r.dp === 'distributed-optimizer' ? ', distributed optimizer' : r.dp ? ', DP all-reduce' : ''}
      </h3>
      <p class="note" data-pipeline-caption>
        The step the ${r.places.length} rank workers ran (the second of two; the first compiles), span
        ${formatMs(r.measured.spanMs)}. Bubble measured on the ranks (the busiest stage's share of the step spent
        waiting: for a neighbour's tensor, before its first pass, after its last):
        <strong data-measured-bubble=${r.measured.bubbleShare}>${pct(r.measured.bubbleShare)}</strong>; projected
        for the same layout:
        ${
          projected === undefined
            ? nothing
            : html`<strong data-projected-bubble=${projected}>${pct(projected)}</strong> (the projection's simulation
                on these measured pass times, no p2p time) and `
        }<span data-formula-bubble=${r.projected.formulaShare}>${pct(r.projected.formulaShare)}</span>
        (${r.projected.formula}, equal stages). Idle share per stage:
        ${r.measured.idleShare.map((x, i) => html`<span data-stage-idle=${i}>${i ? ', ' : ''}${pct(x)}</span>`)};
        between passes, neither computing nor waiting (the executor posting sends, sampling memory):
        ${r.measured.overheadShare.map((x, i) => html`<span data-stage-overhead=${i}>${i ? ', ' : ''}${pct(x)}</span>`)}.
        Click a stage for its TP ranks' own lanes.
      </p>
      ${this.legend(v, schedule === 'zb-h1', dp > 1, blocks, this.stage !== undefined)}
      <svg class="pipeline" data-pipeline data-measured></svg>
      ${this.stageButtons(p)}
      <h4>Live memory per stage over the step</h4>
      <p class="note" data-stage-memory>
        Each stage's rank (TP rank 0) live GPU bytes at the end of each pass: its weights, the gradients made so
        far, the activations kept for the backwards still to come${schedule === 'zb-h1' ? ' and the inputs kept for each deferred W' : ''}.
        Under 1F1B stage i keeps up to min(p − i, m) micro-batches' activations, so stage 0 climbs highest${schedule === 'zb-h1' ? '; ZB-H1 keeps the same activations and, on stage i, what up to i + 1 deferred W passes need besides' : ''}. Peak at
        any moment:
        ${r.memory.map(
          (x, i) =>
            html`<span data-stage-peak=${x.stage} data-bytes=${x.peakBytes} style="color:${stageMemoryColor(x.stage)}"
              >${i ? ', ' : ''}stage ${x.stage} ${(x.peakBytes / 2 ** 20).toFixed(2)} MiB</span
            >`,
        )}.
      </p>
      <svg class="memory" data-live-memory></svg>
      ${this.classCaption(r)}
      <svg class="classes" data-stage-classes-chart></svg>`;
  }

  /** What the by-class chart shows, and whether every rank's classes equal the accounting. */
  private classCaption(r: PipelineRunResult): TemplateResult {
    const bad = r.memoryClasses.flatMap((c) => c.mismatches.map((m) => `stage ${c.stage} TP rank ${c.tpRank} ${m}`));
    return html`<p class="note" data-stage-classes data-check=${bad.length ? 'fail' : 'pass'}>
        By class, each stage's TP rank 0 after each pass, from the rank's own record of its GPU tensors; dashed:
        the accounting (the schedule's count of micro-batches in flight${r.model.schedule === 'zb-h1' ? ' and waiting for W' : ''}
        × each micro-batch's saved bytes from the layer's accounting${r.model.schedule === 'zb-h1' ? ' or, waiting for W, what its weight gradients read and write' : ''},
        plus weights and gradient sums). Weights, gradient sums, saved activations${r.model.schedule === 'zb-h1' ? ' and what waits for W' : ''}
        equal the accounting after every pass of every rank:
        ${
          bad.length
            ? html`<strong class="error">no</strong> — ${bad.slice(0, 4).join('; ')}${bad.length > 4 ? ` (${bad.length} in all)` : ''}.`
            : html`<strong>exact</strong> (${r.memoryClasses.reduce((a, c) => a + c.passes.length, 0)} passes).`
        }
      </p>
      <div class="legend">
        ${stageMemoryClasses.map(
          (c) => html`<span><i style="background:${stageClassStyle[c].color}"></i>${stageClassStyle[c].label}</span>`,
        )}
      </div>`;
  }

  protected override render() {
    if (this.measured) return this.renderMeasured(this.measured);
    const step = this.step;
    if (!step) return nothing;
    const run = step.pipeline;
    const { pp, vpp, tp } = step.degrees;
    const blocks = run.ops.reduce((a, o) => a + o.length, 0);
    return html`<h3>Pipeline schedule: t = ${tp}, p = ${pp}, v = ${vpp}, m = ${run.m}</h3>
      <p class="note" data-pipeline-caption>
        ${vpp > 1 ? "Megatron's interleaved schedule" : '1F1B'} simulated op by op; span
        ${formatMs(run.spanMs)}. Bubble (idle share of the busiest stage):
        <strong data-bubble-share=${run.bubbleShare}>${pct(run.bubbleShare)}</strong>
        ${vpp > 1 ? `(≈ (p−1)/(v·m+p−1) with equal stages)` : '(≈ (p−1)/(m+p−1) with equal stages)'}; p2p sends per step:
        ${run.p2pSends}. Click a stage for its TP lanes.
      </p>
      ${this.legend(vpp, false, false, blocks)}
      <svg class="pipeline" data-pipeline></svg>
      ${this.stageButtons(pp)} ${this.stage !== undefined ? this.lanes(step, this.stage) : nothing}`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-pipeline-view': TpPipelineView;
  }
}
