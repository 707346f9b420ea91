// <tp-live-memory>: live bytes over a step, one lane per rank (or pipeline stage), stacked by lifetime class, with the peak and what is alive at it.
import * as d3 from 'd3';
import { LitElement, css, html, nothing, type PropertyValues } from 'lit';
import { customElement, property, query } from 'lit/decorators.js';
import { liveSeries, type LiveInterval } from '../../accounting/live-memory.ts';
import type { MemoryClass } from '../../projection/pipeline/memory-timeline.ts';
import type { MemoryClassView, MemoryLane } from '../../session/memory-lanes.ts';
import { panelStyles } from '../shared/page-style.ts';
import { tipStyles } from './timeline-style.ts';
import { formatBytes, formatMs, msTickFormat } from '../../core/format.ts';

/** One hue per lifetime; a ranks' class takes its lifetime's hue, lighter for the second of a lifetime. */
const lifetimeColor: Readonly<Record<MemoryClass, string>> = {
  resident: '#4a6fa5',
  perStep: '#d0622b',
  perMicroBatch: '#3f9b57',
  transient: '#b8a13a',
};

function classColors(classes: readonly MemoryClassView[]): Map<string, string> {
  const seen = new Map<MemoryClass, number>();
  const out = new Map<string, string>();
  for (const c of classes) {
    const k = seen.get(c.lifetime) ?? 0;
    seen.set(c.lifetime, k + 1);
    const base = d3.hsl(lifetimeColor[c.lifetime]);
    out.set(c.key, k === 0 ? base.formatHex() : base.brighter(0.7 * k).formatHex());
  }
  return out;
}

const laneHeight = 96;
/** The plot's margins, px; the right one grows to half the last time label (drawLane). */
const margin = { top: 8, right: 16, bottom: 22, left: 64 };
/** The axes' tick labels, px. */
const tickFontPx = 12;
/** Tensors listed at most in the peak's tooltip. */
const maxListed = 24;

/**
 * `<tp-live-memory>`: for every lane an `svg[data-lane]` of the live bytes stacked by class over
 * the step (ms), the peak `g[data-peak]` (hover lists the tensors alive at it in `.tip`) and a
 * dashed level `line[data-predicted]` where the lane carries the accounting's prediction. The time
 * axis shows `domain` (the timeline's zoomed window, `svg[data-t0][data-t1]`), or the whole step.
 */
@customElement('tp-live-memory')
export class TpLiveMemory extends LitElement {
  static override styles = [
    panelStyles,
    tipStyles,
    css`
      :host {
        position: relative;
      }
      .legend {
        display: flex;
        flex-wrap: wrap;
        gap: 4px 14px;
        font-size: 14px;
        margin: 4px 0 6px;
      }
      .legend i {
        display: inline-block;
        width: 14px;
        height: 14px;
        margin-right: 5px;
        vertical-align: -2px;
      }
      .lane-title {
        font-size: 14px;
        margin: 6px 0 0;
      }
      svg {
        display: block;
        font-size: 13px;
      }
    `,
  ];

  @property({ attribute: false }) lanes: readonly MemoryLane[] = [];
  @property({ attribute: false }) classes: readonly MemoryClassView[] = [];
  @property() heading = 'Live memory over the step';
  @property() caption = '';
  /** The visible window [t0, t1] ms (the timeline's, when zoomed or panned); undefined: the whole step. */
  @property({ attribute: false }) domain: readonly [number, number] | undefined;
  /** Where to draw the window's ends, px from this element's left edge (the timeline's plot columns); undefined: the chart's own margins. */
  @property({ attribute: false }) columns: readonly [number, number] | undefined;

  @query('.tip') private tipEl!: HTMLElement;
  private observer: ResizeObserver | undefined;
  private width = 0;
  private frame = 0;

  override connectedCallback(): void {
    super.connectedCallback();
    this.observer = new ResizeObserver(() => {
      const w = this.clientWidth;
      if (w && Math.abs(w - this.width) > 4) this.draw();
    });
    this.observer.observe(this);
  }

  override disconnectedCallback(): void {
    this.observer?.disconnect();
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    super.disconnectedCallback();
  }

  /** The peak markers, one per lane. */
  peaks(): SVGGElement[] {
    return [...this.renderRoot.querySelectorAll<SVGGElement>('g[data-peak]')];
  }

  protected override render() {
    const colors = classColors(this.classes);
    return html`
      <h3>${this.heading}</h3>
      ${this.caption ? html`<p class="note">${this.caption}</p>` : nothing}
      <div class="legend">
        ${this.classes.map((c) => html`<span><i style="background:${colors.get(c.key)}"></i>${c.label}</span>`)}
      </div>
      ${this.lanes.map(
        (l, i) => html`<p class="lane-title" data-lane-title=${i}>
            <strong>${l.title}</strong>: peak <strong data-peak-bytes=${l.peak.peakBytes}>${formatBytes(l.peak.peakBytes)}</strong> at
            ${formatMs(l.peak.peakAt)}${l.predicted ? html` · ${l.predicted.label}: ${formatBytes(l.predicted.bytes)}` : nothing}
          </p>
          <svg data-lane=${i}></svg>`,
      )}
      <div class="tip" hidden></div>
    `;
  }

  protected override updated(changed: PropertyValues<this>): void {
    if (changed.has('lanes') || changed.has('classes')) this.draw();
    else if ((changed.has('domain') || changed.has('columns')) && !this.frame)
      // A zoom or pan fires once per frame: draw once per frame.
      this.frame = requestAnimationFrame(() => {
        this.frame = 0;
        this.draw();
      });
  }

  private draw(): void {
    this.width = this.clientWidth || 900;
    const colors = classColors(this.classes);
    const keys = this.classes.map((c) => c.key);
    const words = new Map(this.classes.map((c) => [c.key, c.label]));
    this.lanes.forEach((lane, i) => {
      const el = this.renderRoot.querySelector<SVGSVGElement>(`svg[data-lane="${i}"]`);
      if (el) this.drawLane(el, lane, keys, colors, words);
    });
  }

  /** The x range: the timeline's columns where they leave room for the y axis and `right` px after them, else the chart's margins. */
  private range(w: number, right: number): [number, number] {
    const c = this.columns;
    return c && c[0] >= margin.left && c[1] <= w - right && c[1] - c[0] >= 120
      ? [c[0], c[1]]
      : [margin.left, w - right];
  }

  private drawLane(
    el: SVGSVGElement,
    lane: MemoryLane,
    keys: readonly string[],
    colors: Map<string, string>,
    words: Map<string, string>,
  ): void {
    const w = this.width;
    const h = laneHeight;
    const svg = d3.select(el).attr('width', w).attr('height', h).attr('viewBox', `0 0 ${w} ${h}`);
    svg.selectAll('*').remove();
    const top = Math.max(lane.peak.peakBytes, lane.predicted?.bytes ?? 0) * 1.08 || 1;
    const [t0, t1] = this.domain ?? [0, lane.end || 1];
    const domain = [t0, t1 > t0 ? t1 : t0 + 1];
    // Ticks and their labels depend on the domain alone. The last label is centred on a tick at most at
    // the plot's right end, so the plot ends half that label's rendered width (+ 2 px) before the svg's.
    const tickCount = Math.max(2, Math.floor(w / 110));
    const ticks = d3.scaleLinear().domain(domain).ticks(tickCount);
    const tickMs = msTickFormat(domain, ticks);
    const probe = svg
      .append('text')
      .attr('font-size', tickFontPx)
      .text(tickMs(ticks.at(-1) ?? domain[1]!));
    const right = Math.max(margin.right, Math.ceil(probe.node()!.getComputedTextLength() / 2) + 2);
    probe.remove();
    const x = d3.scaleLinear().domain(domain).range(this.range(w, right));
    svg.attr('data-t0', x.domain()[0]!).attr('data-t1', x.domain()[1]!);
    const clip = `live-memory-clip-${el.dataset['lane']}`;
    svg
      .append('clipPath')
      .attr('id', clip)
      .append('rect')
      .attr('x', x.range()[0]!)
      .attr('y', 0)
      .attr('width', Math.max(0, x.range()[1]! - x.range()[0]!))
      .attr('height', h);
    const plot = svg.append('g').attr('clip-path', `url(#${clip})`);
    const y = d3
      .scaleLinear()
      .domain([0, top])
      .range([h - margin.bottom, margin.top]);
    const points = liveSeries(lane.intervals as readonly LiveInterval<string>[], keys);
    const stacked = d3
      .stack<(typeof points)[number], string>()
      .keys(keys)
      .value((p, k) => p.bytes[k] ?? 0)(points);
    const area = d3
      .area<d3.SeriesPoint<(typeof points)[number]>>()
      .x((d) => x(d.data.t))
      .y0((d) => y(d[0]))
      .y1((d) => y(d[1]))
      .curve(d3.curveStepAfter);
    plot
      .append('g')
      .selectAll('path')
      .data(stacked)
      .join('path')
      .attr('data-class', (s) => s.key)
      .attr('fill', (s) => colors.get(s.key) ?? '#999')
      .attr('d', (s) => area(s) ?? '');
    svg
      .append('g')
      .attr('transform', `translate(0,${h - margin.bottom})`)
      .call(
        d3
          .axisBottom(x)
          .ticks(tickCount)
          .tickFormat((v) => tickMs(Number(v))),
      );
    svg
      .append('g')
      .attr('transform', `translate(${margin.left},0)`)
      .call(
        d3
          .axisLeft(y)
          .ticks(3)
          .tickFormat((v) => formatBytes(Number(v))),
      );
    svg.selectAll('.tick text').attr('font-size', tickFontPx);
    if (lane.predicted) {
      plot
        .append('line')
        .attr('data-predicted', lane.predicted.bytes)
        .attr('x1', x(0))
        .attr('x2', x(lane.end))
        .attr('y1', y(lane.predicted.bytes))
        .attr('y2', y(lane.predicted.bytes))
        .attr('stroke', '#111')
        .attr('stroke-dasharray', '6 4')
        .attr('stroke-width', 1.5);
    }
    const alive = lane.peak.alive.map((k) => lane.intervals[k]!).sort((a, b) => b.bytes - a.bytes);
    const px = x(lane.peak.peakAt);
    const py = y(lane.peak.peakBytes);
    const peak = plot
      .append('g')
      .attr('data-peak', lane.peak.peakBytes)
      .attr('data-peak-at', lane.peak.peakAt)
      .attr('display', lane.peak.peakAt < x.domain()[0]! || lane.peak.peakAt > x.domain()[1]! ? 'none' : null)
      .attr('tabindex', 0)
      .attr('aria-label', `${lane.title}: peak ${formatBytes(lane.peak.peakBytes)}; ${alive.length} tensors alive`);
    peak
      .append('line')
      .attr('x1', px)
      .attr('x2', px)
      .attr('y1', y(0))
      .attr('y2', py)
      .attr('stroke', '#b00020')
      .attr('stroke-width', 2);
    peak.append('circle').attr('cx', px).attr('cy', py).attr('r', 6).attr('fill', '#b00020');
    peak
      .append('rect')
      .attr('x', px - 10)
      .attr('y', margin.top)
      .attr('width', 20)
      .attr('height', h - margin.top - margin.bottom)
      .attr('fill', 'transparent');
    const lines = [
      `${lane.title}: peak ${formatBytes(lane.peak.peakBytes)} at ${formatMs(lane.peak.peakAt)}, alive:`,
      ...alive
        .slice(0, maxListed)
        .map((a) => `${a.label} · ${words.get(a.class) ?? a.class} · ${formatBytes(a.bytes)}`),
      ...(alive.length > maxListed ? [`… and ${alive.length - maxListed} more`] : []),
    ];
    const show = (): void => {
      const tip = this.tipEl;
      tip.textContent = lines.join('\n');
      tip.hidden = false;
      const host = this.getBoundingClientRect();
      const box = el.getBoundingClientRect();
      tip.style.left = `${Math.min(box.left - host.left + px + 12, Math.max(0, host.width - 460))}px`;
      tip.style.top = `${box.top - host.top + py + 8}px`;
    };
    const hide = (): void => {
      this.tipEl.hidden = true;
    };
    peak.on('mouseenter', show).on('focus', show).on('mouseleave', hide).on('blur', hide);
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-live-memory': TpLiveMemory;
  }
}
