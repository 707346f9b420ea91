// The D3 part of <tp-timeline>: draws lanes and blocks into an SVG, zooms the time axis, shows a tooltip.
import * as d3 from 'd3';
import { measuredLabels, measuredTooltip } from '../shared/measured-format.ts';
import { labelCandidates, tooltipLines } from '../shared/timeline-format.ts';
import { tracedLabels, tracedTooltip } from '../shared/traced-format.ts';
import { formatMs, msTickFormat } from '../../core/format.ts';
import {
  fitLabel,
  eventPass,
  rankIdsOf,
  laneBlocks,
  laneLayout,
  phaseSpans,
  shownEvents,
  shownSpan,
  shownTotals,
  visibleRange,
  type ChartEvent,
  type ChartTimeline,
  type Lane,
  type PhaseView,
  type ViewBlock,
} from './timeline-layout.ts';
import {
  bandFill,
  blockFill,
  computeFill,
  exposedColor,
  fontPx,
  margin,
  slowedFill,
  totalsWidth,
  waitColor,
  waitShare,
} from './timeline-style.ts';
import { timelineStragglers } from './timeline-waits.ts';
import { drawLaneNames, drawTotals, textMeasure } from './timeline-text.ts';
import { expertStraggler } from './moe-view-model.ts';

/** Callbacks of a chart. */
export interface ChartHooks {
  /** The visible time window changed (zoom, pan, reset, redraw), ms. */
  onZoom(domain: [number, number]): void;
}

type G = d3.Selection<SVGGElement, unknown, null, undefined>;

/** Smallest visible window: 1 µs across the plot. */
const minWindowMs = 1e-3;
/** Blocks narrower than this get no label, px. */
const minLabelPx = 26;
/** Collectives and exposed parts are drawn at least this wide, px (a 40 µs all-reduce in a 90 ms step is 0.4 px). */
const minBlockPx = 3;
/** Line height of block labels, px. */
const lineH = fontPx.block + 2;

let nextId = 0;

const labelsOf = (e: ChartEvent): string[][] =>
  'slice' in e ? measuredLabels(e) : 'opIndex' in e ? labelCandidates(e) : tracedLabels(e);
const tooltipOf = (e: ChartEvent): string[] =>
  'slice' in e ? measuredTooltip(e) : 'opIndex' in e ? tooltipLines(e) : tracedTooltip(e);

/** Draws one Timeline (or measured window) into `svgEl`; zoom and pan change only transforms and the visible labels. */
export class TimelineChart {
  private readonly svg: d3.Selection<SVGSVGElement, unknown, null, undefined>;
  private readonly id = `tl${nextId++}`;
  private readonly measure = textMeasure(fontPx.block);
  private readonly zoom = d3.zoom<SVGGElement, unknown>();
  private plot!: G;
  private zoomed!: G;
  private labels!: G;
  private top!: G;
  private axis!: G;
  private hatch!: d3.Selection<SVGPatternElement, unknown, null, undefined>;
  private slowedHatch!: d3.Selection<SVGPatternElement, unknown, null, undefined>;
  private x = d3.scaleLinear();
  private plotW = 0;
  private lanesH = 0;
  private lanes: Lane[] = [];
  private perLane = new Map<string, ViewBlock[]>();
  private flat: ViewBlock[] = [];
  private index = new Map<ViewBlock, number>();
  private candidates = new Map<ViewBlock, string[][]>();
  private spans: ReturnType<typeof phaseSpans> = [];
  private end = { t1: 0, endRank: 0 };
  private transform = d3.zoomIdentity;
  /** Collectives and exposed parts with their width at zoom 1; kept ≥ minBlockPx on screen. */
  private thin: { el: SVGRectElement; w: number }[] = [];
  /** Each collective event that waited for a straggler, and that rank. */
  private waits = new Map<ChartEvent, number>();
  /** The power-of-two zoom level the thin blocks' widths were last set for. */
  private kb = 0;

  constructor(
    svgEl: SVGSVGElement,
    private readonly tip: HTMLElement,
    private readonly hooks: ChartHooks,
  ) {
    this.svg = d3.select(svgEl);
    this.svg.on('pointermove', (ev: PointerEvent) => this.hover(ev)).on('pointerleave', () => (this.tip.hidden = true));
  }

  /** Redraws everything for `tl` (the shown pass only) at `width` px; the zoom is reset. */
  draw(tl: ChartTimeline | undefined, phase: PhaseView, width: number): void {
    this.svg.selectAll('*').remove();
    this.flat = [];
    this.kb = 0;
    this.index.clear();
    this.candidates.clear();
    if (!tl) {
      this.svg.attr('width', 0).attr('height', 0);
      return;
    }
    const events = shownEvents(tl, phase);
    const span = shownSpan(tl, phase);
    this.end = span;
    this.spans = phaseSpans(events);
    const layout = laneLayout(rankIdsOf(tl));
    this.lanes = layout.lanes;
    this.lanesH = layout.height;
    const right = totalsWidth(width);
    this.plotW = Math.max(200, width - margin.left - right);
    this.x = d3
      .scaleLinear()
      .domain([span.t0, span.t1 > span.t0 ? span.t1 : span.t0 + 1])
      .range([0, this.plotW]);
    const shown = new Set<ChartEvent>(events);
    const { waits } = timelineStragglers(tl);
    this.waits = new Map(waits.map((w) => [w.event, w.straggler]));
    this.perLane = laneBlocks(
      events,
      waits.filter((w) => shown.has(w.event)),
    );
    this.svg.attr('width', this.plotW + margin.left + right).attr('height', this.lanesH + margin.top + margin.bottom);
    this.skeleton();
    this.drawBlocks();
    const straggler = expertStraggler(tl.events)?.rank ?? null;
    this.outlineLane(straggler);
    drawLaneNames(this.svg.append('g').attr('transform', `translate(0,${margin.top})`), this.lanes, straggler);
    drawTotals(
      this.svg.append('g').attr('transform', `translate(${margin.left + this.plotW + 14},${margin.top})`),
      this.lanes,
      shownTotals(tl, phase),
      span,
      right < margin.right,
    );
    const maxK = Math.max(1, (this.x.domain()[1] - this.x.domain()[0]) / minWindowMs);
    const ext: [[number, number], [number, number]] = [
      [0, 0],
      [this.plotW, this.lanesH],
    ];
    this.zoom
      .scaleExtent([1, maxK])
      .extent(ext)
      .translateExtent(ext)
      .on('zoom', (ev: d3.D3ZoomEvent<SVGGElement, unknown>) => this.apply(ev.transform));
    this.plot.call(this.zoom).on('dblclick.zoom', null);
    this.zoom.transform(this.plot, d3.zoomIdentity);
  }

  /** The plot's left and right edges in client px (where the visible window's ends are drawn). */
  plotEdges(): [number, number] {
    const left = this.svg.node()!.getBoundingClientRect().left + margin.left;
    return [left, left + this.plotW];
  }

  /** The visible window, ms. */
  domain(): [number, number] {
    const [a, b] = this.transform.rescaleX(this.x).domain();
    return [a!, b!];
  }

  /** Shows [t0, t1] ms (clamped to the timeline). */
  zoomTo(t0: number, t1: number): void {
    if (!this.plot) return;
    const a = this.x(t0);
    const b = this.x(Math.max(t1, t0 + minWindowMs));
    const k = this.plotW / Math.max(b - a, 1e-9);
    this.zoom.transform(this.plot, d3.zoomIdentity.scale(k).translate(-a, 0));
  }

  /** Back to the whole shown pass. */
  reset(): void {
    if (this.plot) this.zoom.transform(this.plot, d3.zoomIdentity);
  }

  private skeleton(): void {
    const defs = this.svg.append('defs');
    defs
      .append('clipPath')
      .attr('id', `${this.id}-clip`)
      .append('rect')
      .attr('y', -margin.top)
      .attr('width', this.plotW)
      .attr('height', this.lanesH + margin.top);
    this.hatch = defs
      .append('pattern')
      .attr('id', `${this.id}-hatch`)
      .attr('patternUnits', 'userSpaceOnUse')
      .attr('width', 8)
      .attr('height', 8);
    this.hatch.append('rect').attr('width', 8).attr('height', 8).attr('fill', exposedColor).attr('fill-opacity', 0.28);
    this.hatch
      .append('path')
      .attr('d', 'M-2,2 l4,-4 M0,8 l8,-8 M6,10 l4,-4')
      .attr('stroke', exposedColor)
      .attr('stroke-width', 2.6);
    this.slowedHatch = defs
      .append('pattern')
      .attr('id', `${this.id}-slowed`)
      .attr('patternUnits', 'userSpaceOnUse')
      .attr('width', 8)
      .attr('height', 8);
    this.slowedHatch.append('rect').attr('width', 8).attr('height', 8).attr('fill', slowedFill.ground);
    this.slowedHatch
      .append('path')
      .attr('d', 'M-2,6 l4,4 M0,0 l8,8 M6,-2 l4,4')
      .attr('stroke', slowedFill.stripe)
      .attr('stroke-width', 2.2);
    this.plot = this.svg
      .append('g')
      .attr('class', 'plot-area')
      .attr('transform', `translate(${margin.left},${margin.top})`);
    // Catches wheel and drag over empty lane space too.
    this.plot.append('rect').attr('width', this.plotW).attr('height', this.lanesH).attr('fill', 'transparent');
    const clipped = this.plot.append('g').attr('clip-path', `url(#${this.id}-clip)`);
    this.zoomed = clipped.append('g').attr('class', 'zoomed');
    this.labels = clipped
      .append('g')
      .attr('class', 'labels')
      .attr('pointer-events', 'none')
      .attr('font-size', fontPx.block);
    this.top = this.plot.append('g').attr('class', 'top').attr('pointer-events', 'none').attr('font-size', fontPx.top);
    this.axis = this.plot.append('g').attr('class', 'axis').attr('transform', `translate(0,${this.lanesH})`);
  }

  private drawBlocks(): void {
    const x = this.x;
    const bands = this.zoomed.append('g').attr('class', 'bands');
    for (const s of this.spans) {
      bands
        .append('rect')
        .attr('x', x(s.t0))
        .attr('width', x(s.t1) - x(s.t0))
        .attr('y', -margin.top)
        .attr('height', this.lanesH + margin.top)
        .attr('fill', bandFill[s.phase]);
    }
    for (const back of this.spans.slice(1)) {
      this.zoomed
        .append('line')
        .attr('class', 'phase-sep')
        .attr('x1', x(back.t0))
        .attr('x2', x(back.t0))
        .attr('y1', -margin.top)
        .attr('y2', this.lanesH)
        .attr('stroke', '#555')
        .attr('stroke-width', 1.5)
        .attr('stroke-dasharray', '5 4')
        .attr('vector-effect', 'non-scaling-stroke');
    }
    this.thin = [];
    for (const lane of this.lanes) {
      const g = this.zoomed
        .append('g')
        .attr('data-lane', lane.kind)
        .attr('data-rank', lane.rank)
        .attr('aria-label', `rank ${lane.rank} · ${lane.kind}`)
        .attr('transform', `translate(0,${lane.y})`);
      const own = this.perLane.get(`${lane.rank}:${lane.kind}`) ?? [];
      const exposed = lane.kind === 'comm' ? (this.perLane.get(`${lane.rank}:exposed`) ?? []) : [];
      const waiting = lane.kind === 'comm' ? (this.perLane.get(`${lane.rank}:wait`) ?? []) : [];
      const slowed = lane.kind === 'compute' ? (this.perLane.get(`${lane.rank}:slowed`) ?? []) : [];
      // No strokes: a non-scaling stroke per block costs more than the rest of a zoom frame together.
      [...own, ...slowed, ...exposed, ...waiting].forEach((b, j) => {
        const i = this.flat.push(b) - 1;
        this.index.set(b, i);
        const w = Math.max(0, x(b.t1) - x(b.t0));
        const r = g
          .append('rect')
          .attr('data-i', i)
          .attr('data-rank', b.rank)
          .attr('data-kind', b.kind)
          .attr('data-op', b.event.op)
          .attr('data-phase', eventPass(b.event) ?? null)
          .attr('x', x(b.t0))
          .attr('width', w)
          .attr('height', b.kind === 'wait' ? lane.height * waitShare : lane.height);
        if (b.kind === 'exposed') r.attr('fill', `url(#${this.id}-hatch)`);
        else if (b.kind === 'slowed') r.attr('fill', `url(#${this.id}-slowed)`);
        else if (b.kind === 'wait') r.attr('fill', waitColor).attr('data-straggler', this.waits.get(b.event) ?? null);
        else {
          const pass = eventPass(b.event) ?? 'forward'; // a measured kernel has no pass: the forward shades
          r.attr('fill', b.kind === 'compute' ? computeFill(pass, j) : blockFill.comm[pass]);
        }
        if (b.kind !== 'compute' && b.kind !== 'slowed') this.thin.push({ el: r.node()!, w });
      });
    }
    this.zoomed
      .append('line')
      .attr('class', 'step-end')
      .attr('x1', x(this.end.t1))
      .attr('x2', x(this.end.t1))
      .attr('y1', -margin.top + 4)
      .attr('y2', this.lanesH)
      .attr('stroke', '#111')
      .attr('stroke-width', 2.5)
      .attr('vector-effect', 'non-scaling-stroke');
  }

  /** A dashed frame around both lanes of `rank` (the expert straggler), under the blocks' labels; none for null. */
  private outlineLane(rank: number | null): void {
    const mine = this.lanes.filter((l) => l.rank === rank);
    if (!mine.length) return;
    const y0 = Math.min(...mine.map((l) => l.y)) - 3;
    const y1 = Math.max(...mine.map((l) => l.y + l.height)) + 3;
    this.plot
      .append('rect')
      .attr('class', 'moe-straggler')
      .attr('data-moe-straggler', rank)
      .attr('x', -2)
      .attr('y', y0)
      .attr('width', this.plotW + 4)
      .attr('height', y1 - y0)
      .attr('fill', 'none')
      .attr('stroke', exposedColor)
      .attr('stroke-width', 2)
      .attr('stroke-dasharray', '6 4')
      .attr('pointer-events', 'none');
  }

  private apply(t: d3.ZoomTransform): void {
    this.transform = t;
    const kb = 2 ** Math.floor(Math.log2(t.k));
    if (kb !== this.kb) {
      // Widths change only when the zoom crosses a power of two: on screen a thin block is minBlockPx to 2·minBlockPx wide.
      this.kb = kb;
      for (const { el, w } of this.thin) el.setAttribute('width', String(Math.max(w, minBlockPx / kb)));
      // The hatch lives in the scaled group: undo the scale (to within 2×) so the stripes keep their slant.
      this.hatch.attr('patternTransform', `scale(${1 / kb},1)`);
      this.slowedHatch.attr('patternTransform', `scale(${1 / kb},1)`);
    }
    this.zoomed.attr('transform', `translate(${t.x},0) scale(${t.k},1)`);
    const zx = t.rescaleX(this.x);
    const tickCount = Math.max(2, Math.floor(this.plotW / 120));
    const tickMs = msTickFormat(zx.domain(), zx.ticks(tickCount));
    this.drawLabels(zx);
    this.drawTop(zx);
    this.axis
      .call(
        d3
          .axisBottom(zx)
          .ticks(tickCount)
          .tickFormat((d) => tickMs(Number(d))),
      )
      .attr('font-size', fontPx.axis)
      .attr('font-family', null);
    this.hooks.onZoom(this.domain());
  }

  private drawLabels(zx: d3.ScaleLinear<number, number>): void {
    const [d0, d1] = zx.domain() as [number, number];
    const out: { i: number; x: number; y: number; lines: readonly string[]; fill: string }[] = [];
    for (const lane of this.lanes) {
      const list = this.perLane.get(`${lane.rank}:${lane.kind}`) ?? [];
      const [lo, hi] = visibleRange(list, d0, d1);
      for (let j = lo; j < hi; j++) {
        const b = list[j]!;
        const a = Math.max(zx(b.t0), 0);
        const w = Math.min(zx(b.t1), this.plotW) - a;
        if (w < minLabelPx) continue;
        let cands = this.candidates.get(b);
        if (!cands) this.candidates.set(b, (cands = labelsOf(b.event)));
        const lines = fitLabel(cands, w, lane.height - 4, lineH, this.measure);
        if (lines === null) continue;
        const fill = b.kind === 'compute' ? '#fff' : '#111';
        out.push({
          i: this.index.get(b)!,
          x: a + 4,
          y: lane.y + lane.height / 2 - ((lines.length - 1) * lineH) / 2,
          lines,
          fill,
        });
      }
    }
    this.labels
      .selectAll<SVGTextElement, (typeof out)[number]>('text')
      .data(out, (d) => d.i)
      .join('text')
      .attr('x', (d) => d.x)
      .attr('y', (d) => d.y)
      .attr('fill', (d) => d.fill)
      .each(function (d) {
        const t = d3.select(this);
        if (t.attr('data-text') === d.lines.join('\n')) {
          t.selectAll('tspan').attr('x', d.x);
          return;
        }
        t.attr('data-text', d.lines.join('\n'));
        t.selectAll('tspan')
          .data(d.lines)
          .join('tspan')
          .attr('x', d.x)
          .attr('dy', (_, k) => (k === 0 ? '0.35em' : `${lineH}px`))
          .text((l) => l);
      });
  }

  private drawTop(zx: d3.ScaleLinear<number, number>): void {
    const names = this.spans
      .map((s) => {
        const a = Math.max(zx(s.t0), 0);
        const b = Math.min(zx(s.t1), this.plotW);
        return { phase: s.phase, x: (a + b) / 2, show: b - a > 90 };
      })
      .filter((s) => s.show);
    this.top
      .selectAll<SVGTextElement, (typeof names)[number]>('text.phase')
      .data(names, (d) => d.phase)
      .join('text')
      .attr('class', 'phase')
      .attr('x', (d) => d.x)
      .attr('y', -6)
      .attr('text-anchor', 'middle')
      .attr('font-weight', 600)
      .attr('fill', '#333')
      .text((d) => (d.phase === 'finalize' ? 'finalize_model_grads' : `${d.phase} pass`));
    const ex = zx(this.end.t1);
    const step = ex >= 0 && ex <= this.plotW + 1 ? [ex] : [];
    this.top
      .selectAll<SVGTextElement, number>('text.step')
      .data(step)
      .join('text')
      .attr('class', 'step')
      .attr('x', (d) => Math.max(d - 6, 0))
      .attr('y', -24)
      .attr('text-anchor', (d) => (d - 6 > 200 ? 'end' : 'start'))
      .attr('font-weight', 700)
      .attr('fill', '#111')
      .text(`step end ${formatMs(this.end.t1)} · rank ${this.end.endRank}`);
  }

  private hover(ev: PointerEvent): void {
    const target = ev.target instanceof Element ? ev.target.closest('[data-i]') : null;
    const b = target ? this.flat[Number(target.getAttribute('data-i'))] : undefined;
    if (!b) {
      this.tip.hidden = true;
      return;
    }
    const lines = tooltipOf(b.event);
    const straggler = this.waits.get(b.event);
    if (b.kind === 'wait' && straggler !== undefined)
      lines.splice(
        1,
        0,
        `WAITING ${formatMs(b.t1 - b.t0)}: ${formatMs(b.t0)} – ${formatMs(b.t1)}, for rank ${straggler}, the last to enter this collective (the straggler)`,
      );
    else if (straggler !== undefined)
      lines.push(`rank ${straggler} entered this collective last: this rank waited for it`);
    if (b.kind === 'slowed')
      lines.splice(
        1,
        0,
        `SLOWED BY A TRANSFER ${formatMs(b.t1 - b.t0)}: ${formatMs(b.t0)} – ${formatMs(b.t1)}, the ring shared this machine's cores`,
      );
    if (b.kind === 'exposed')
      lines.splice(
        1,
        0,
        `EXPOSED ${formatMs(b.t1 - b.t0)}: ${formatMs(b.t0)} – ${formatMs(b.t1)}, not hidden by compute`,
      );
    this.tip.textContent = lines.join('\n');
    this.tip.hidden = false;
    const box = (this.tip.offsetParent ?? this.svg.node()!).getBoundingClientRect();
    const px = ev.clientX - box.left;
    const left = px + 16 + this.tip.offsetWidth > box.width ? px - 16 - this.tip.offsetWidth : px + 16;
    this.tip.style.left = `${Math.max(0, left)}px`;
    this.tip.style.top = `${ev.clientY - box.top + 16}px`;
  }
}
