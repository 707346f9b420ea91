// D3 line charts of a value per TP degree (GEMM-efficiency view, cluster panel): one line per series, legend under the plot.
import * as d3 from 'd3';

/** One line: (t, value) points; `dashed` for references such as the ideal. */
export interface ChartSeries {
  readonly name: string;
  readonly color: string;
  readonly dashed?: boolean;
  readonly points: readonly { readonly t: number; readonly v: number }[];
}

/** A chart: x = the degrees (evenly spaced, they are powers of two), y linear or log. */
export interface LineChartSpec {
  readonly title: string;
  readonly yLabel: string;
  readonly degrees: readonly number[];
  readonly series: readonly ChartSeries[];
  readonly logY?: boolean;
}

/** Width of every line chart in CSS pixels; charts are drawn at 1:1 (never scaled), see chartGridStyles. */
export const chartWidth = 420;
/** Height of the plot (title, axes, lines); the legend below adds a row per line of items. */
const plotHeight = 290;
const M = { left: 62, right: 18, top: 34, bottom: 44 };
const legendRow = 20;
const legendFontPx = 13;

/**
 * Widths of `names` at the legend's font in `svg`, measured together (one layout, not one per name),
 * or 0.6 em per character where the svg is not rendered.
 */
function textWidths(svg: d3.Selection<SVGSVGElement, unknown, null, undefined>, names: readonly string[]): number[] {
  const probes = svg
    .selectAll<SVGTextElement, string>('text.probe')
    .data(names)
    .join('text')
    .attr('class', 'probe')
    .attr('font-size', legendFontPx)
    .attr('visibility', 'hidden')
    .text((s) => s);
  const widths = probes.nodes().map((n, i) => n.getComputedTextLength() || names[i]!.length * legendFontPx * 0.6);
  probes.remove();
  return widths;
}

/**
 * Lays the legend items (swatch 24 px, gap 6 px, text, 18 px to the next) left to right in rows
 * of at most `width`, returning each item's (x, row).
 */
function legendLayout(widths: readonly number[], width: number): { x: number; row: number }[] {
  const out: { x: number; row: number }[] = [];
  let x = 0,
    row = 0;
  for (const w of widths) {
    const item = 30 + w;
    if (x > 0 && x + item > width) {
      x = 0;
      row++;
    }
    out.push({ x, row });
    x += item + 18;
  }
  return out;
}

/**
 * Draws `spec` into `svg` (replacing what was there) at chartWidth × (plot + legend rows) CSS
 * pixels, 1:1 (the viewBox equals the size, so text is never scaled); the legend sits under the
 * plot and wraps so every name is shown whole. Each line carries `data-series`.
 */
export function drawLineChart(svg: SVGSVGElement, spec: LineChartSpec): void {
  const W = chartWidth,
    H = plotHeight;
  const root = d3.select(svg).attr('role', 'img').attr('aria-label', spec.title);
  root.selectAll('*').remove();
  const items = legendLayout(
    textWidths(
      root,
      spec.series.map((s) => s.name),
    ),
    W - 16,
  );
  const rows = items.length ? Math.max(...items.map((i) => i.row)) + 1 : 0;
  const height = H + rows * legendRow + 6;
  root.attr('viewBox', `0 0 ${W} ${height}`).attr('width', W).attr('height', height);
  const pts = spec.series.flatMap((s) => s.points).filter((p) => Number.isFinite(p.v) && (!spec.logY || p.v > 0));
  const x = d3
    .scalePoint<number>()
    .domain([...spec.degrees])
    .range([M.left, W - M.right])
    .padding(0.3);
  const [lo, hi] = d3.extent(pts, (p) => p.v) as [number | undefined, number | undefined];
  const y = spec.logY
    ? d3
        .scaleLog()
        .domain([(lo ?? 1) / 1.3, (hi ?? 10) * 1.3])
        .range([H - M.bottom, M.top])
        .nice()
    : d3
        .scaleLinear()
        .domain([0, (hi ?? 1) * 1.1])
        .range([H - M.bottom, M.top])
        .nice();
  root.append('text').attr('x', 4).attr('y', 18).attr('font-size', 15).attr('font-weight', 600).text(spec.title);
  root
    .append('g')
    .attr('transform', `translate(0,${H - M.bottom})`)
    .call(d3.axisBottom(x).tickFormat((t) => `t=${t}`))
    .attr('font-size', 12); // both axes' ticks at one size: the layout audit compares charts by their ticks
  root
    .append('g')
    .attr('transform', `translate(${M.left},0)`)
    .call(d3.axisLeft(y).ticks(5, spec.logY ? '~g' : undefined))
    .attr('font-size', 12);
  root
    .append('text')
    .attr('transform', `translate(14,${(H - M.bottom + M.top) / 2}) rotate(-90)`)
    .attr('text-anchor', 'middle')
    .attr('font-size', 13)
    .text(spec.yLabel);
  const line = d3
    .line<{ t: number; v: number }>()
    .defined((p) => Number.isFinite(p.v) && (!spec.logY || p.v > 0))
    .x((p) => x(p.t) ?? 0)
    .y((p) => y(p.v));
  spec.series.forEach((s, i) => {
    const g = root.append('g').attr('data-series', s.name);
    g.append('path')
      .attr('d', line([...s.points]))
      .attr('fill', 'none')
      .attr('stroke', s.color)
      .attr('stroke-width', s.dashed ? 2 : 2.5)
      .attr('stroke-dasharray', s.dashed ? '6 4' : null);
    g.selectAll('circle')
      .data(s.points.filter((p) => Number.isFinite(p.v) && (!spec.logY || p.v > 0)))
      .join('circle')
      .attr('cx', (p) => x(p.t) ?? 0)
      .attr('cy', (p) => y(p.v))
      .attr('r', 3.5)
      .attr('fill', s.color)
      .append('title')
      .text((p) => `${s.name} at t=${p.t}: ${d3.format('.3~g')(p.v)}`);
    const lx = 8 + items[i]!.x,
      ly = H + items[i]!.row * legendRow + 4;
    g.append('line')
      .attr('class', 'legend')
      .attr('x1', lx)
      .attr('x2', lx + 24)
      .attr('y1', ly)
      .attr('y2', ly)
      .attr('stroke', s.color)
      .attr('stroke-width', 3)
      .attr('stroke-dasharray', s.dashed ? '6 4' : null);
    g.append('text')
      .attr('class', 'legend')
      .attr('x', lx + 30)
      .attr('y', ly + 4)
      .attr('font-size', legendFontPx)
      .text(s.name);
  });
}

/** A colour per GEMM name (Tableau 10, then Set 3). */
export function seriesColor(i: number): string {
  const c = [...d3.schemeTableau10, ...d3.schemeSet2];
  return c[i % c.length];
}
