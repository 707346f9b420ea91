// Text around the plot of <tp-timeline>: lane names on the left, per-rank totals on the right, text measuring.
import type * as d3 from 'd3';
import { formatMs } from '../../core/format.ts';
import { estimateTextWidth, type Lane, type ShownTotals } from './timeline-layout.ts';
import { exposedColor, fontPx, margin } from './timeline-style.ts';

type G = d3.Selection<SVGGElement, unknown, null, undefined>;

/** Width of a text at `fontPx` in the element's font, px; measured on a canvas and cached (an estimate without one). */
export function textMeasure(px: number): (text: string) => number {
  const ctx = typeof document === 'undefined' ? null : document.createElement('canvas').getContext('2d');
  if (!ctx) return estimateTextWidth(px);
  ctx.font = `${px}px system-ui, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif`;
  const cache = new Map<string, number>();
  return (text) => {
    let w = cache.get(text);
    if (w === undefined) cache.set(text, (w = ctx.measureText(text).width));
    return w;
  };
}

/**
 * "rank r · compute" / "rank r · comm" left of each lane, right-aligned; the compute lane of the
 * expert straggler `marked` (if any) reads "▶ rank r · compute" in the exposed colour.
 */
export function drawLaneNames(g: G, lanes: readonly Lane[], marked: number | null = null): void {
  g.attr('font-size', fontPx.lane).attr('fill', '#111');
  for (const lane of lanes) {
    const mark = lane.kind === 'compute' && lane.rank === marked;
    g.append('text')
      .attr('class', 'lane-name')
      .attr('x', margin.left - 10)
      .attr('y', lane.y + lane.height / 2)
      .attr('dy', '0.35em')
      .attr('text-anchor', 'end')
      .attr('font-weight', lane.kind === 'compute' ? 600 : 400)
      .attr('fill', mark ? exposedColor : null)
      .attr('data-moe-straggler', mark ? lane.rank : null)
      .text(`${mark ? '▶ ' : ''}rank ${lane.rank} · ${lane.kind}`);
  }
}

/**
 * Totals right of each lane: compute time on the compute lane; comm and exposed (red) on the comm
 * lane; the shown pass's end and its last rank on top. `compact` drops the words the lane names
 * already say ("compute", "comm").
 */
export function drawTotals(
  g: G,
  lanes: readonly Lane[],
  totals: readonly ShownTotals[],
  end: { t1: number; endRank: number },
  compact = false,
): void {
  g.attr('font-size', compact ? fontPx.lane - 1 : fontPx.lane).attr('fill', '#111');
  g.append('text')
    .attr('class', 'step-total')
    .attr('y', -14)
    .attr('font-weight', 700)
    .text(`step ${formatMs(end.t1)} (rank ${end.endRank})`);
  for (const lane of lanes) {
    const tot = totals.find((x) => x.rank === lane.rank);
    if (!tot) continue;
    const t = g
      .append('text')
      .attr('class', 'lane-total')
      .attr('y', lane.y + lane.height / 2)
      .attr('dy', '0.35em');
    if (lane.kind === 'compute') {
      t.append('tspan')
        .attr('font-weight', 600)
        .text(`${compact ? '' : 'compute '}${formatMs(tot.computeMs)}`);
      continue;
    }
    t.append('tspan').text(`${compact ? '' : 'comm '}${formatMs(tot.commMs)} · `);
    t.append('tspan')
      .attr('fill', exposedColor)
      .attr('font-weight', 700)
      .text(`exposed ${formatMs(tot.exposedMs)}`);
  }
}
