// D3 drawing of a simulated pipeline schedule: stages × time, micro-batch blocks, the bubble, p2p arrows.
import * as d3 from 'd3';
import type { PipelineOp, PipelineRun } from '../../projection/pipeline/pipeline-schedule.ts';

/** Blocks above which the p2p arrows are left out (each op has one; past this they hide the blocks). */
export const maxArrowBlocks = 600;

const M = { left: 78, right: 16, top: 8, bottom: 40 };
const rowH = 34;
const blockPad = 3;
const labelPx = 12;

/**
 * Fill of a block: forward in blues, backward in oranges, model chunk c of v from dark (c = 0) to
 * light (c = v − 1), so the interleaved schedule's chunks are told apart.
 */
export function blockColor(pass: PipelineOp['pass'], chunk: number, v: number): string {
  const depth = v > 1 ? 0.85 - (0.5 * chunk) / (v - 1) : 0.75;
  return (pass === 'forward' ? d3.interpolateBlues : d3.interpolateOranges)(depth);
}

/** Whether a block's label is written in white (on the darker shades). */
const darkBlock = (chunk: number, v: number): boolean => v === 1 || chunk / (v - 1) < 0.5;

/** The idle gaps of one stage's ops inside [0, span]: the bubble that stage sees. */
export function idleGaps(ops: readonly PipelineOp[], spanMs: number): { t0: number; t1: number }[] {
  const out: { t0: number; t1: number }[] = [];
  let t = 0;
  for (const o of ops) {
    if (o.t0 > t) out.push({ t0: t, t1: o.t0 });
    t = Math.max(t, o.t1);
  }
  if (spanMs > t) out.push({ t0: t, t1: spanMs });
  return out;
}

/**
 * The p2p edges of a run: a forward of virtual stage k = c·p + i takes its input from the forward
 * of k − 1 of the same micro-batch, a backward from the backward of k + 1 (the last virtual
 * stage's backward follows its own forward, on the same stage: no edge).
 */
export function p2pEdges(run: PipelineRun): { from: PipelineOp; to: PipelineOp }[] {
  const { p, v } = run;
  const key = (pass: PipelineOp['pass'], k: number, mb: number): string => `${pass}:${k}:${mb}`;
  const byKey = new Map<string, PipelineOp>();
  for (const row of run.ops) for (const o of row) byKey.set(key(o.pass, o.chunk * p + o.stage, o.microBatch), o);
  const out: { from: PipelineOp; to: PipelineOp }[] = [];
  for (const row of run.ops)
    for (const o of row) {
      const k = o.chunk * p + o.stage;
      const src = o.pass === 'forward' ? k - 1 : k + 1;
      if (src < 0 || src > p * v - 1) continue;
      const from = byKey.get(key(o.pass, src, o.microBatch));
      if (from) out.push({ from, to: o });
    }
  return out;
}

/** What to draw and where the chart's stage rows call back. */
export interface PipelineChartSpec {
  readonly run: PipelineRun;
  /** Width in CSS pixels; the chart is drawn 1:1 (viewBox = size). */
  readonly width: number;
  /** The stage whose TP lanes are shown (highlighted), if any. */
  readonly selected?: number;
  readonly onStage: (stage: number) => void;
}

/**
 * Draws the schedule into `svg`: one row per stage `g[data-stage]`, each op a
 * `rect[data-kind="block"][data-pass][data-chunk][data-micro-batch]` labelled with its micro-batch,
 * each idle gap a hatched `rect[data-kind="bubble"]`, the p2p sends as arrows `line[data-kind="p2p"]`
 * from the producing op's end to the consuming op's start (left out past maxArrowBlocks blocks).
 */
export function drawPipelineChart(svg: SVGSVGElement, spec: PipelineChartSpec): void {
  const { run, width } = spec;
  const height = M.top + run.p * rowH + M.bottom;
  const root = d3.select(svg);
  root.selectAll('*').remove();
  root.attr('width', width).attr('height', height).attr('viewBox', `0 0 ${width} ${height}`);
  const defs = root.append('defs');
  defs
    .append('pattern')
    .attr('id', 'bubble-hatch')
    .attr('patternUnits', 'userSpaceOnUse')
    .attr('width', 8)
    .attr('height', 8)
    .append('path')
    .attr('d', 'M-2,2 L2,-2 M0,8 L8,0 M6,10 L10,6')
    .attr('stroke', '#9aa3ad')
    .attr('stroke-width', 1.4);
  defs
    .append('marker')
    .attr('id', 'p2p-head')
    .attr('viewBox', '0 0 8 8')
    .attr('refX', 7)
    .attr('refY', 4)
    .attr('markerWidth', 6)
    .attr('markerHeight', 6)
    .attr('orient', 'auto')
    .append('path')
    .attr('d', 'M0,0 L8,4 L0,8 z')
    .attr('fill', '#333');

  const x = d3
    .scaleLinear()
    .domain([0, run.spanMs || 1])
    .range([M.left, width - M.right]);
  const y = (stage: number): number => M.top + stage * rowH;
  const blocks = run.ops.reduce((a, o) => a + o.length, 0);

  for (let i = 0; i < run.p; i++) {
    const g = root
      .append('g')
      .attr('data-stage', i)
      .attr('class', 'stage')
      .style('cursor', 'pointer')
      .on('click', () => spec.onStage(i));
    g.append('rect')
      .attr('x', 0)
      .attr('y', y(i))
      .attr('width', width)
      .attr('height', rowH)
      .attr('fill', spec.selected === i ? '#fff6d6' : i % 2 ? '#f7f9fc' : '#fff');
    g.append('text')
      .attr('x', 6)
      .attr('y', y(i) + rowH / 2)
      .attr('dy', '0.35em')
      .attr('font-size', 13)
      .attr('font-weight', spec.selected === i ? 700 : 400)
      .text(`stage ${i}`);
    for (const gap of idleGaps(run.ops[i]!, run.spanMs))
      g.append('rect')
        .attr('data-kind', 'bubble')
        .attr('x', x(gap.t0))
        .attr('y', y(i) + blockPad)
        .attr('width', Math.max(0, x(gap.t1) - x(gap.t0)))
        .attr('height', rowH - 2 * blockPad)
        .attr('fill', 'url(#bubble-hatch)');
    for (const o of run.ops[i]!) {
      const w = Math.max(0.5, x(o.t1) - x(o.t0));
      g.append('rect')
        .attr('data-kind', 'block')
        .attr('data-pass', o.pass)
        .attr('data-chunk', o.chunk)
        .attr('data-micro-batch', o.microBatch)
        .attr('x', x(o.t0))
        .attr('y', y(i) + blockPad)
        .attr('width', w)
        .attr('height', rowH - 2 * blockPad)
        .attr('fill', blockColor(o.pass, o.chunk, run.v))
        .attr('stroke', '#fff')
        .attr('stroke-width', 0.6)
        .append('title')
        .text(
          `stage ${i}, ${o.pass} of micro-batch ${o.microBatch}${run.v > 1 ? `, chunk ${o.chunk}` : ''}: ${o.t0.toFixed(2)}–${o.t1.toFixed(2)} ms`,
        );
      const label = String(o.microBatch);
      if (w >= label.length * labelPx * 0.62 + 4)
        g.append('text')
          .attr('x', x(o.t0) + w / 2)
          .attr('y', y(i) + rowH / 2)
          .attr('dy', '0.35em')
          .attr('text-anchor', 'middle')
          .attr('font-size', labelPx)
          .attr('fill', darkBlock(o.chunk, run.v) ? '#fff' : '#111')
          .attr('pointer-events', 'none')
          .text(label);
    }
  }

  if (blocks <= maxArrowBlocks) {
    const arrows = root.append('g').attr('data-p2p', '').attr('pointer-events', 'none');
    for (const { from, to } of p2pEdges(run)) {
      const down = to.stage > from.stage;
      arrows
        .append('line')
        .attr('data-kind', 'p2p')
        .attr('x1', x(from.t1))
        .attr('y1', y(from.stage) + (down ? rowH - blockPad : blockPad))
        .attr('x2', x(to.t0))
        .attr('y2', y(to.stage) + (down ? blockPad : rowH - blockPad))
        .attr('stroke', '#333')
        .attr('stroke-width', 1)
        .attr('marker-end', 'url(#p2p-head)');
    }
  }

  const axis = root
    .append('g')
    .attr('transform', `translate(0,${M.top + run.p * rowH})`)
    .call(
      d3
        .axisBottom(x)
        .ticks(Math.max(2, Math.floor(width / 110)))
        .tickFormat((d) => `${d3.format('~g')(Number(d))}`),
    );
  axis.selectAll('text').attr('font-size', 12);
  root
    .append('text')
    .attr('x', (M.left + width - M.right) / 2)
    .attr('y', height - 6)
    .attr('text-anchor', 'middle')
    .attr('font-size', 13)
    .text('ms from the step’s first forward');
}
