// Each pipeline stage's live bytes by class over the step, stacked, with the accounting's level.
import * as d3 from 'd3';
import { stageMemoryClasses, type StageClassBytes, type StageMemoryClass } from '../../mesh/pipeline-memory.ts';
import type { StageClassLane } from '../../session/pipeline-lanes.ts';

/** How the chart and its legend name and colour each class. */
export const stageClassStyle: Readonly<Record<StageMemoryClass, { readonly label: string; readonly color: string }>> = {
  weights: { label: 'weights', color: '#4e79a7' },
  gradients: { label: 'gradient sums', color: '#76b7b2' },
  activations: { label: 'saved activations (micro-batches in flight)', color: '#f28e2b' },
  deferredW: { label: 'held for deferred W (ZB-H1)', color: '#e15759' },
  staging: { label: 'p2p sends in flight', color: '#b07aa1' },
  workspace: { label: 'workspace (outputs, rest)', color: '#bab0ac' },
};

const counted = (b: StageClassBytes): number => b.weights + b.gradients + b.activations + b.deferredW;

/**
 * One band per stage (`g[data-stage-classes]`, its value the stage): the classes stacked as step areas from
 * one pass's end to the next (`path[data-class]`), and the accounting's weights + gradients + saved
 * activations + deferred W as a dashed step line (`path[data-kind="accounted"]`), KiB on each band's axis.
 */
export function drawStageClasses(
  svg: SVGSVGElement,
  lanes: readonly StageClassLane[],
  spanMs: number,
  width: number,
): void {
  const band = 92;
  const M = { left: 120, right: 16, top: 6, bottom: 24 };
  const height = M.top + lanes.length * band + M.bottom;
  const root = d3.select(svg);
  root.selectAll('*').remove();
  root.attr('width', width).attr('height', height).attr('viewBox', `0 0 ${width} ${height}`);
  const x = d3
    .scaleLinear()
    .domain([0, spanMs || 1])
    .range([M.left, width - M.right]);
  const kib = 1024;
  const top =
    Math.max(
      1,
      ...lanes.flatMap((l) =>
        l.points.map((p) => stageMemoryClasses.reduce((a, c) => a + Math.max(0, p.measured[c]), 0)),
      ),
    ) / kib;
  lanes.forEach((l, i) => {
    const y0 = M.top + i * band;
    const y = d3
      .scaleLinear()
      .domain([0, top * 1.05])
      .range([y0 + band - 8, y0 + 4]);
    const g = root.append('g').attr('data-stage-classes', l.stage);
    // The last pass's level runs on to the step's end.
    const pts = [
      ...l.points,
      ...(l.points.length ? [{ ...l.points.at(-1)!, t: Math.max(spanMs, l.points.at(-1)!.t) }] : []),
    ];
    let below = pts.map(() => 0);
    for (const c of stageMemoryClasses) {
      const above = pts.map((p, j) => below[j]! + Math.max(0, p.measured[c]));
      if (above.some((v, j) => v > below[j]!)) {
        const area = d3
          .area<number>()
          .x((j) => x(pts[j]!.t))
          .y0((j) => y(below[j]! / kib))
          .y1((j) => y(above[j]! / kib))
          .curve(d3.curveStepAfter);
        g.append('path')
          .attr('data-class', c)
          .attr('d', area(pts.map((_, j) => j)))
          .attr('fill', stageClassStyle[c].color)
          .append('title')
          .text(
            `stage ${l.stage}, ${stageClassStyle[c].label}: up to ${(Math.max(...pts.map((p) => p.measured[c])) / kib).toFixed(1)} KiB at a pass's end`,
          );
      }
      below = above;
    }
    const line = d3
      .line<(typeof pts)[number]>()
      .x((p) => x(p.t))
      .y((p) => y(counted(p.accounted) / kib))
      .curve(d3.curveStepAfter);
    g.append('path')
      .attr('data-kind', 'accounted')
      .attr('d', line(pts))
      .attr('fill', 'none')
      .attr('stroke', '#222')
      .attr('stroke-dasharray', '4 3')
      .attr('stroke-width', 1.2)
      .append('title')
      .text(
        `stage ${l.stage}: the accounting's weights + gradients + saved activations + deferred-W inputs and gradient buffers`,
      );
    g.append('g')
      .attr('transform', `translate(${M.left},0)`)
      .call(d3.axisLeft(y).ticks(3))
      .selectAll('text')
      .attr('font-size', 11);
    g.append('text')
      .attr('x', 4)
      .attr('y', y0 + band / 2)
      .attr('font-size', 12)
      .text(`stage ${l.stage} (KiB)`);
  });
  root
    .append('g')
    .attr('transform', `translate(0,${height - M.bottom})`)
    .call(d3.axisBottom(x).ticks(Math.max(2, Math.floor(width / 110))))
    .selectAll('text')
    .attr('font-size', 11);
}
