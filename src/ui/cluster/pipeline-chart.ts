// D3 drawing of a simulated pipeline schedule: stages × time, micro-batch blocks, the bubble, p2p arrows.
import * as d3 from 'd3';
import {
  idleGaps,
  type ChartPass,
  type ChartRow,
  type PipelineChartData,
  type StageMemoryLane,
} from '../../session/pipeline-lanes.ts';

/** Blocks above which the p2p arrows are left out (each op has one; past this they hide the blocks). */
export const maxArrowBlocks = 600;

const M = { left: 120, right: 16, top: 8, bottom: 40 };
const rowH = 34;
const blockPad = 3;
const labelPx = 12;

const passColors: Record<ChartPass, (t: number) => string> = {
  forward: d3.interpolateBlues,
  backward: d3.interpolateOranges,
  weight: d3.interpolateGreens,
};

/**
 * Fill of a block: forward in blues, backward in oranges, ZB-H1's weight gradients in greens, model
 * chunk c of v from dark (c = 0) to light (c = v − 1), so the interleaved schedule's chunks are told apart.
 */
export function blockColor(pass: ChartPass, chunk: number, v: number): string {
  const depth = v > 1 ? 0.85 - (0.5 * chunk) / (v - 1) : 0.75;
  return passColors[pass](depth);
}

/** Fill of a data-parallel sync block. */
export const syncColor = '#8e6bbf';

/** Fill of a TP collective's strip on an opened stage's lanes. */
export const tpCommColor = '#c0392b';

/** Whether a block's label is written in white (on the darker shades). */
const darkBlock = (chunk: number, v: number): boolean => v === 1 || chunk / (v - 1) < 0.5;

/** What to draw and where the chart's stage rows call back. */
export interface PipelineChartSpec {
  readonly data: PipelineChartData;
  /** Width in CSS pixels; the chart is drawn 1:1 (viewBox = size). */
  readonly width: number;
  /** The stage whose TP lanes are shown (highlighted), if any. */
  readonly selected?: number;
  readonly onStage: (stage: number) => void;
}

/**
 * Draws the schedule into `svg`: one row per (replica, stage) `g[data-stage][data-replica]`, each
 * block a `rect[data-kind="block"][data-pass][data-chunk][data-micro-batch]` labelled with its
 * micro-batch, each idle gap a hatched `rect[data-kind="bubble"]`, each data-parallel sync a
 * `rect[data-kind="dp-sync"]`, an opened stage's TP collectives as thin `rect[data-kind="tp-comm"]`,
 * the p2p messages as arrows `line[data-kind="p2p"]` (left out past maxArrowBlocks blocks).
 */
export function drawPipelineChart(svg: SVGSVGElement, spec: PipelineChartSpec): void {
  const { data, width } = spec;
  const rows = data.rows;
  const replicas = new Set(rows.map((r) => r.replica)).size;
  const height = M.top + rows.length * rowH + M.bottom;
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
    .domain([0, data.spanMs || 1])
    .range([M.left, width - M.right]);
  const index = new Map(rows.map((r, n) => [r, n]));
  const y = (row: ChartRow): number => M.top + index.get(row)! * rowH;
  const blocks = rows.reduce((a, r) => a + r.blocks.length, 0);

  for (const row of rows) {
    const i = row.stage;
    const g = root
      .append('g')
      .attr('data-stage', i)
      .attr('data-replica', row.replica)
      .attr('class', 'stage')
      .style('cursor', 'pointer')
      .on('click', () => spec.onStage(i));
    g.append('rect')
      .attr('x', 0)
      .attr('y', y(row))
      .attr('width', width)
      .attr('height', rowH)
      .attr('fill', spec.selected === i ? '#fff6d6' : index.get(row)! % 2 ? '#f7f9fc' : '#fff');
    g.append('text')
      .attr('x', 6)
      .attr('y', y(row) + rowH / 2)
      .attr('dy', '0.35em')
      .attr('font-size', 13)
      .attr('font-weight', spec.selected === i ? 700 : 400)
      .text(
        `${replicas > 1 ? `d${row.replica} · ` : ''}stage ${i}${row.tpRank === undefined ? '' : ` · t${row.tpRank}`}`,
      );
    const busy = [...row.blocks, ...row.syncs].sort((a, b) => a.t0 - b.t0);
    for (const gap of idleGaps(busy, data.spanMs))
      g.append('rect')
        .attr('data-kind', 'bubble')
        .attr('x', x(gap.t0))
        .attr('y', y(row) + blockPad)
        .attr('width', Math.max(0, x(gap.t1) - x(gap.t0)))
        .attr('height', rowH - 2 * blockPad)
        .attr('fill', 'url(#bubble-hatch)');
    for (const o of row.blocks) {
      const w = Math.max(0.5, x(o.t1) - x(o.t0));
      g.append('rect')
        .attr('data-kind', 'block')
        .attr('data-pass', o.pass)
        .attr('data-chunk', o.chunk)
        .attr('data-micro-batch', o.microBatch)
        .attr('x', x(o.t0))
        .attr('y', y(row) + blockPad)
        .attr('width', w)
        .attr('height', rowH - 2 * blockPad)
        .attr('fill', blockColor(o.pass, o.chunk, data.v))
        .attr('stroke', '#fff')
        .attr('stroke-width', 0.6)
        .append('title')
        .text(
          `${replicas > 1 ? `replica ${row.replica}, ` : ''}stage ${i}, ${o.pass} of micro-batch ${o.microBatch}${data.v > 1 ? `, chunk ${o.chunk}` : ''}: ${o.t0.toFixed(2)}–${o.t1.toFixed(2)} ms`,
        );
      const label = String(o.microBatch);
      if (w >= label.length * labelPx * 0.62 + 4)
        g.append('text')
          .attr('x', x(o.t0) + w / 2)
          .attr('y', y(row) + rowH / 2)
          .attr('dy', '0.35em')
          .attr('text-anchor', 'middle')
          .attr('font-size', labelPx)
          .attr('fill', darkBlock(o.chunk, data.v) ? '#fff' : '#111')
          .attr('pointer-events', 'none')
          .text(label);
    }
    for (const sync of row.syncs)
      g.append('rect')
        .attr('data-kind', 'dp-sync')
        .attr('x', x(sync.t0))
        .attr('y', y(row) + blockPad)
        .attr('width', Math.max(0.5, x(sync.t1) - x(sync.t0)))
        .attr('height', rowH - 2 * blockPad)
        .attr('fill', syncColor)
        .append('title')
        .text(
          `replica ${row.replica}, stage ${i}: gradient sync over DP, ${sync.t0.toFixed(2)}–${sync.t1.toFixed(2)} ms`,
        );
    for (const c of row.comm)
      g.append('rect')
        .attr('data-kind', 'tp-comm')
        .attr('x', x(c.t0))
        .attr('y', y(row) + rowH - blockPad - 4)
        .attr('width', Math.max(0.5, x(c.t1) - x(c.t0)))
        .attr('height', 4)
        .attr('fill', tpCommColor)
        .append('title')
        .text(`TP rank ${row.tpRank ?? 0}: a TP collective, ${c.t0.toFixed(2)}–${c.t1.toFixed(2)} ms`);
  }

  if (blocks <= maxArrowBlocks) {
    const arrows = root.append('g').attr('data-p2p', '').attr('pointer-events', 'none');
    for (const a of data.arrows) {
      const down = index.get(a.to)! > index.get(a.from)!;
      arrows
        .append('line')
        .attr('data-kind', 'p2p')
        .attr('x1', x(a.t0))
        .attr('y1', y(a.from) + (down ? rowH - blockPad : blockPad))
        .attr('x2', x(a.t1))
        .attr('y2', y(a.to) + (down ? blockPad : rowH - blockPad))
        .attr('stroke', '#333')
        .attr('stroke-width', 1)
        .attr('marker-end', 'url(#p2p-head)');
    }
  }

  const axis = root
    .append('g')
    .attr('transform', `translate(0,${M.top + rows.length * rowH})`)
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

/**
 * Draws each stage's live bytes over the step under the schedule, in its time columns
 * (`path[data-kind="stage-memory"][data-stage][data-replica]`, a step curve: the bytes held from one
 * pass's end to the next), one colour per stage, MiB on the left axis.
 */
export function drawStageMemory(
  svg: SVGSVGElement,
  lanes: readonly StageMemoryLane[],
  spanMs: number,
  width: number,
): void {
  const height = 150;
  const root = d3.select(svg);
  root.selectAll('*').remove();
  root.attr('width', width).attr('height', height).attr('viewBox', `0 0 ${width} ${height}`);
  const mib = 2 ** 20;
  const top = Math.max(1, ...lanes.flatMap((l) => l.points.map((p) => p.bytes))) / mib;
  const x = d3
    .scaleLinear()
    .domain([0, spanMs || 1])
    .range([M.left, width - M.right]);
  const y = d3
    .scaleLinear()
    .domain([0, top * 1.05])
    .range([height - 24, 22]);
  for (const l of lanes) {
    const line = d3
      .line<{ t: number; bytes: number }>()
      .x((p) => x(p.t))
      .y((p) => y(p.bytes / mib))
      .curve(d3.curveStepAfter);
    root
      .append('path')
      .attr('data-kind', 'stage-memory')
      .attr('data-stage', l.stage)
      .attr('data-replica', l.replica)
      .attr('d', line(l.points))
      .attr('fill', 'none')
      .attr('stroke', stageMemoryColor(l.stage))
      .attr('stroke-width', 1.8)
      .append('title')
      .text(
        `stage ${l.stage}${l.replica ? `, replica ${l.replica}` : ''}: up to ${(Math.max(...l.points.map((p) => p.bytes)) / mib).toFixed(2)} MiB at a pass's end`,
      );
  }
  root
    .append('g')
    .attr('transform', `translate(${M.left},0)`)
    .call(d3.axisLeft(y).ticks(4))
    .selectAll('text')
    .attr('font-size', 11);
  root
    .append('g')
    .attr('transform', `translate(0,${height - 24})`)
    .call(d3.axisBottom(x).ticks(Math.max(2, Math.floor(width / 110))))
    .selectAll('text')
    .attr('font-size', 11);
  root.append('text').attr('x', 4).attr('y', 12).attr('font-size', 12).text('MiB live');
}

/** The colour drawStageMemory gives stage i (for a legend). */
export const stageMemoryColor = (stage: number): string => d3.schemeTableau10[stage % 10]!;
