// D3 line charts of the GEMM-efficiency view: a value per TP degree, one line per series, legend at the right.
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

const W = 560,
  H = 330;
const M = { left: 64, right: 190, top: 30, bottom: 44 };

/** Draws `spec` into `svg` (replacing what was there); each line carries `data-series`. */
export function drawLineChart(svg: SVGSVGElement, spec: LineChartSpec): void {
  const root = d3
    .select(svg)
    .attr('viewBox', `0 0 ${W} ${H}`)
    .attr('width', W)
    .attr('height', H)
    .attr('role', 'img')
    .attr('aria-label', spec.title);
  root.selectAll('*').remove();
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
  root.append('text').attr('x', M.left).attr('y', 18).attr('font-size', 15).attr('font-weight', 600).text(spec.title);
  root
    .append('g')
    .attr('transform', `translate(0,${H - M.bottom})`)
    .call(d3.axisBottom(x).tickFormat((t) => `t=${t}`))
    .attr('font-size', 13);
  root
    .append('g')
    .attr('transform', `translate(${M.left},0)`)
    .call(d3.axisLeft(y).ticks(5, spec.logY ? '~g' : undefined))
    .attr('font-size', 12);
  root
    .append('text')
    .attr('transform', `translate(16,${(H - M.bottom + M.top) / 2}) rotate(-90)`)
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
    const ly = M.top + 6 + i * 18;
    g.append('line')
      .attr('x1', W - M.right + 12)
      .attr('x2', W - M.right + 34)
      .attr('y1', ly)
      .attr('y2', ly)
      .attr('stroke', s.color)
      .attr('stroke-width', 3)
      .attr('stroke-dasharray', s.dashed ? '6 4' : null);
    g.append('text')
      .attr('x', W - M.right + 40)
      .attr('y', ly + 4)
      .attr('font-size', 12)
      .text(s.name);
  });
}

/** A colour per GEMM name (Tableau 10, then Set 3). */
export function seriesColor(i: number): string {
  const c = [...d3.schemeTableau10, ...d3.schemeSet2];
  return c[i % c.length];
}
