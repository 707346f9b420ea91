// <tp-timeline>: per-rank compute and comm lanes of a scheduled step (or a measured job), exposed communication, zoom and pan.
import { LitElement, html, svg, type PropertyValues } from 'lit';
import { customElement, property, query } from 'lit/decorators.js';
import type { BlockKind } from '../../schedule/blocks.ts';
import { TimelineChart } from './timeline-chart.ts';
import { eventPass, type ChartTimeline, type PhaseView } from './timeline-layout.ts';
import { blockFill, exposedColor, slowedFill, timelineStyles, waitColor } from './timeline-style.ts';
import { stragglerSentence, timelineStragglers } from './timeline-waits.ts';
import { expertStraggler, expertStragglerSentence } from './moe-view-model.ts';
import { observeWidth } from '../shared/width-observer.ts';

/** Detail of the `timeline-zoom` event: the visible window, ms from the step's start, and where the plot draws it. */
export interface TimelineZoomDetail {
  readonly t0: number;
  readonly t1: number;
  /** The plot's left and right edges, client px: a chart under the timeline can draw t0 … t1 in the same columns. */
  readonly left: number;
  readonly right: number;
}

const swatch = (fill: string, stroke = 'none') =>
  html`<svg viewBox="0 0 28 16" aria-hidden="true">
    <rect x="1" y="1" width="26" height="14" fill=${fill} stroke=${stroke} stroke-width="2" />
  </svg>`;
const hatchSwatch = html`<svg viewBox="0 0 28 16" aria-hidden="true">
  <rect x="1" y="1" width="26" height="14" fill=${blockFill.comm.forward} />
  ${svg`<path d="M0,16 L16,0 M8,16 L24,0 M16,16 L32,0 M-8,16 L8,0" stroke=${exposedColor} stroke-width="2.6" />`}
  <rect x="1" y="1" width="26" height="14" fill="none" stroke=${exposedColor} stroke-width="2" />
</svg>`;

const slowedSwatch = html`<svg viewBox="0 0 28 16" aria-hidden="true">
  <rect x="1" y="1" width="26" height="14" fill=${slowedFill.ground} />
  ${svg`<path d="M0,0 L16,16 M8,0 L24,16 M16,0 L32,16 M-8,0 L8,16" stroke=${slowedFill.stripe} stroke-width="2.2" />`}
</svg>`;

/**
 * `<tp-timeline>`: for every rank a compute lane `g[data-lane="compute"][data-rank=r]` and a comm
 * lane `g[data-lane="comm"][data-rank=r]` of SVG blocks, each `rect[data-rank][data-kind][data-op]`
 * (kind compute | comm | exposed | wait: the part of a collective spent waiting for the last rank
 * to enter it, `data-straggler` that rank | slowed: the end of a kernel's block a ring transfer added; the head's `p[data-straggler]` names the straggler). It renders in its shadow root: use `blocks(kind)` or
 * `el.shadowRoot.querySelectorAll('[data-kind="exposed"]')` (Playwright locators pierce it).
 * Fires `timeline-zoom` (detail {t0, t1} ms) when the visible window changes.
 */
@customElement('tp-timeline')
export class TpTimeline extends LitElement {
  static override styles = timelineStyles;

  /** The scheduled step (or measured window) to draw; undefined shows a placeholder. */
  @property({ attribute: false }) timeline: ChartTimeline | undefined;
  /** Which pass to show. */
  @property() phase: PhaseView = 'both';
  /** Where the times come from, shown above the chart. */
  @property() caption = '';

  @query('svg.plot') private svgEl!: SVGSVGElement;
  @query('.tip') private tipEl!: HTMLElement;
  private chart: TimelineChart | undefined;
  private width = 0;
  private observer: ResizeObserver | undefined;

  /** Every block element, or those of one kind (compute, comm, exposed), in lane order. */
  blocks(kind?: BlockKind): SVGRectElement[] {
    const sel = kind ? `rect[data-kind="${kind}"]` : 'rect[data-kind]';
    return [...(this.renderRoot.querySelectorAll<SVGRectElement>(sel) ?? [])];
  }

  /** The visible time window [t0, t1], ms from the step's start. */
  visibleDomain(): [number, number] {
    return this.chart?.domain() ?? [0, 0];
  }

  /** Zooms the time axis to [t0, t1] ms (clamped to the shown pass). */
  zoomTo(t0: number, t1: number): void {
    this.chart?.zoomTo(t0, t1);
  }

  /** Shows the whole shown pass again. */
  resetZoom(): void {
    this.chart?.reset();
  }

  override connectedCallback(): void {
    super.connectedCallback();
    this.observer = observeWidth(
      this,
      () => this.width,
      (w) => {
        this.width = w;
        this.redraw(true);
      },
    );
  }

  override disconnectedCallback(): void {
    this.observer?.disconnect();
    super.disconnectedCallback();
  }

  protected override render() {
    const verdict = this.timeline ? timelineStragglers(this.timeline).verdict : undefined;
    const straggler = verdict ? stragglerSentence(verdict) : null;
    const experts = this.timeline ? expertStraggler(this.timeline.events) : null;
    // a recorded trace whose ranks marked their passes shades and bands them as a scheduled step
    const passes = this.timeline?.events.some((e) => eventPass(e) !== undefined) ?? false;
    return html`
      <div class="head">
        ${this.caption ? html`<p class="caption">${this.caption}</p>` : null}
        ${
          experts
            ? html`<p class="caption" data-moe-straggler=${experts.rank} data-rows=${experts.rows}>
                ${expertStragglerSentence(experts)}
              </p>`
            : null
        }
        ${straggler ? html`<p class="caption" data-straggler=${verdict!.straggler!}>${straggler}</p>` : null}
        <div class="legend" role="list" aria-label="legend">
          ${
            this.timeline && 'measured' in this.timeline
              ? html`<span role="listitem">${swatch(blockFill.compute.forward)} compute kernel (any stream)</span>
                  <span role="listitem">${swatch(blockFill.comm.forward, blockFill.comm.backward)} NCCL kernel</span>`
              : this.timeline && 'traced' in this.timeline
                ? html`<span role="listitem">${swatch(blockFill.compute.forward)} kernel the ranks timed (expert GEMMs: rows per expert)${passes ? ', forward' : ''}</span>
                  ${passes ? html`<span role="listitem">${swatch(blockFill.compute.backward)} the same, backward</span>` : null}
                  <span role="listitem">${swatch(blockFill.comm.forward, blockFill.comm.backward)} collective (all-to-all: bytes per peer)</span>`
                : html`<span role="listitem">${swatch(blockFill.compute.forward)} compute, forward</span>
                  <span role="listitem">${swatch(blockFill.compute.backward)} compute, backward</span>
                  <span role="listitem">${swatch(blockFill.comm.forward, blockFill.comm.backward)} collective</span>`
          }
          <span role="listitem">${hatchSwatch} exposed (not hidden by compute)</span>
          ${
            experts
              ? html`<span role="listitem" data-legend="moe-straggler"
                  >${swatch('none', exposedColor)} the expert straggler's lanes (most token rows)</span
                >`
              : null
          }
          ${
            this.timeline?.events.some((e) => 'transfer' in e)
              ? html`<span role="listitem" data-legend="slowed"
                  >${slowedSwatch} kernel's extra time under a ring transfer (sharing this machine's cores)</span
                >`
              : null
          }
          ${
            straggler
              ? html`<span role="listitem"
                  >${swatch(waitColor)} waiting inside a collective for the last rank to enter it</span
                >`
              : null
          }
        </div>
        <button type="button" @click=${() => this.resetZoom()}>Reset zoom</button>
        <span class="hint">wheel: zoom · drag: pan · hover: details</span>
      </div>
      ${this.timeline ? null : html`<p class="empty">No timeline yet.</p>`}
      <div class="chart">
        <svg class="plot" role="img" aria-label="per-rank timeline"></svg>
        <div class="tip" hidden></div>
      </div>
    `;
  }

  protected override updated(changed: PropertyValues<this>): void {
    if (!this.chart) {
      this.chart = new TimelineChart(this.svgEl, this.tipEl, {
        onZoom: ([t0, t1]) => {
          const [left, right] = this.chart?.plotEdges() ?? [0, 0];
          this.dispatchEvent(
            new CustomEvent<TimelineZoomDetail>('timeline-zoom', {
              detail: { t0, t1, left, right },
              bubbles: true,
              composed: true,
            }),
          );
        },
      });
      this.redraw();
      return;
    }
    if (changed.has('timeline') || changed.has('phase')) this.redraw();
  }

  /** Draws at the current width; `keepZoom` keeps the visible window (a resize), otherwise shows the whole pass. */
  private redraw(keepZoom = false): void {
    if (!this.chart) return;
    const window = this.chart.domain();
    this.width ||= this.clientWidth || 1100;
    this.chart.draw(this.timeline, this.phase, this.width);
    if (keepZoom) this.chart.zoomTo(window[0], window[1]);
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-timeline': TpTimeline;
  }
}
