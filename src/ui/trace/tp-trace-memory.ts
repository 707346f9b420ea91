// <tp-trace-memory>: a rank's PyTorch allocator history (the job bundle's memory-rank-<r>.json), drawn
// as allocated and reserved bytes over time, beside the projection's memory of the stage that rank holds.
import * as d3 from 'd3';
import { LitElement, css, html, nothing, type PropertyValues } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import { formatBytes } from '../../core/format.ts';
import type { LoadedSnapshot, MemoryHistory } from '../../kineto/memory-snapshot.ts';
import type { JobManifest } from '../../megatron/job-manifest.ts';
import { jobMemoryVsProjected, type MemoryVsProjected } from '../../projection/studies/memory-vs-projected.ts';
import { LatestWins } from '../../session/latest-wins.ts';
import { panelStyles } from '../shared/page-style.ts';

const W = 720;
const H = 240;
const M = { left: 72, right: 16, top: 12, bottom: 40 };
/** Points drawn per line at most: buckets keep their maximum, so peaks survive. */
const maxPoints = 2000;

/** (x, y) points of `ys` over `xs`, at most maxPoints, each the maximum of its bucket. */
function bucketMax(xs: readonly number[], ys: readonly number[]): [number, number][] {
  const per = Math.max(1, Math.ceil(xs.length / maxPoints));
  const out: [number, number][] = [];
  for (let i = 0; i < xs.length; i += per) {
    let y = ys[i]!;
    for (let j = i + 1; j < Math.min(xs.length, i + per); j++) y = Math.max(y, ys[j]!);
    out.push([xs[i]!, y]);
  }
  return out;
}

/**
 * `<tp-trace-memory>`: the chart `svg[data-memory-chart]` (lines `[data-series="allocated|reserved"]`,
 * the projected peak `[data-series="projected-peak"]` once a job's manifest is there) and the table
 * `table[data-table="memory"]` (rows `tr[data-line]` with `data-predicted-bytes`, `data-measured-bytes`).
 */
@customElement('tp-trace-memory')
export class TpTraceMemory extends LitElement {
  static override styles = [
    panelStyles,
    css`
      svg {
        display: block;
        max-width: 100%;
        height: auto;
      }
      .error {
        color: #8a0010;
        font-weight: 600;
      }
    `,
  ];

  @property({ attribute: false }) snapshot: LoadedSnapshot | undefined;
  /** The job bundle's manifest: selects the projection of the rank's stage. */
  @property({ attribute: false }) job: JobManifest | undefined;

  @state() private compared: MemoryVsProjected | undefined;
  @state() private error = '';
  private readonly comparisons = new LatestWins();

  protected override willUpdate(changed: PropertyValues<this>): void {
    if (changed.has('snapshot') || changed.has('job')) this.compare();
  }

  override disconnectedCallback(): void {
    this.comparisons.drop();
    super.disconnectedCallback();
  }

  private compare(): void {
    this.compared = undefined;
    this.error = '';
    const s = this.snapshot;
    const job = this.job;
    if (!s || !job) {
      this.comparisons.drop();
      return;
    }
    void this.comparisons.run({
      work: () => jobMemoryVsProjected(s, job),
      done: (c) => (this.compared = c),
      failed: (e) => (this.error = e instanceof Error ? e.message : String(e)),
    });
  }

  protected override updated(changed: PropertyValues): void {
    // Redrawn when what it draws changed: the history, or the projected peak the comparison brings.
    if (!changed.has('snapshot') && !changed.has('compared')) return;
    const svg = this.renderRoot.querySelector<SVGSVGElement>('svg[data-memory-chart]');
    if (svg && this.snapshot) this.draw(svg, this.snapshot.history);
  }

  private draw(svg: SVGSVGElement, h: MemoryHistory): void {
    const peak = this.compared?.lines.find((l) => l.what === 'peak allocated')?.predictedBytes;
    const root = d3.select(svg).attr('viewBox', `0 0 ${W} ${H}`).attr('width', W).attr('height', H);
    root.selectAll('*').remove();
    const xs = h.at;
    const x = d3
      .scaleLinear()
      .domain([0, Math.max(1e-9, xs.at(-1) ?? 1)])
      .range([M.left, W - M.right]);
    const y = d3
      .scaleLinear()
      .domain([0, Math.max(h.peakReserved, peak ?? 0) * 1.05 || 1])
      .range([H - M.bottom, M.top]);
    root
      .append('g')
      .attr('transform', `translate(0,${H - M.bottom})`)
      .call(d3.axisBottom(x).ticks(6));
    root
      .append('g')
      .attr('transform', `translate(${M.left},0)`)
      .call(
        d3
          .axisLeft(y)
          .ticks(5)
          .tickFormat((v) => formatBytes(Number(v))),
      );
    root
      .append('text')
      .attr('x', (M.left + W - M.right) / 2)
      .attr('y', H - 6)
      .attr('text-anchor', 'middle')
      .attr('font-size', 12)
      .text(h.timed ? 'ms from the first recorded allocator event' : 'allocator event (the snapshot has no times)');
    const line = d3
      .line<[number, number]>()
      .x((p) => x(p[0]))
      .y((p) => y(p[1]))
      .curve(d3.curveStepAfter);
    const series = [
      { name: 'reserved', ys: h.reserved, color: '#9aa5b8' },
      { name: 'allocated', ys: h.allocated, color: '#1f4e9c' },
    ];
    for (const s of series)
      root
        .append('path')
        .attr('data-series', s.name)
        .attr('fill', 'none')
        .attr('stroke', s.color)
        .attr('stroke-width', 1.5)
        .attr('d', line(bucketMax(xs, s.ys)));
    if (peak !== undefined)
      root
        .append('line')
        .attr('data-series', 'projected-peak')
        .attr('x1', M.left)
        .attr('x2', W - M.right)
        .attr('y1', y(peak))
        .attr('y2', y(peak))
        .attr('stroke', '#c2410c')
        .attr('stroke-dasharray', '6 4');
  }

  protected override render() {
    const s = this.snapshot;
    if (!s) return nothing;
    const h = s.history;
    const c = this.compared;
    const b = (x: number | undefined) => (x === undefined ? '—' : formatBytes(x));
    return html`
      <h3>Memory: PyTorch's allocator history${s.rank !== undefined ? `, rank ${s.rank}` : ''}</h3>
      <p class="note" data-memory-summary>
        ${s.file}: ${h.allocated.length} allocator events on device ${h.device}; peak allocated
        ${formatBytes(h.peakAllocated)}, peak reserved ${formatBytes(h.peakReserved)} (blue: allocated; grey:
        reserved${c ? `; dashed orange: the projected peak of stage ${c.stage}` : ''}).
        ${this.job ? '' : 'Drop the job bundle’s megatron-job.json with it to set it beside the projection.'}
      </p>
      <svg data-memory-chart role="img" aria-label="allocated and reserved bytes over the allocator history"></svg>
      ${this.error ? html`<p class="error" role="alert" data-memory-error>${this.error}</p>` : nothing}
      ${
        c
          ? html`<p class="note">
                Rank ${c.rank} holds pipeline stage ${c.stage}; measured peak allocated / projected peak =
                ${c.ratio.toFixed(2)}×.
              </p>
              <table data-table="memory">
                <thead>
                  <tr>
                    <th></th>
                    <th class="num">projected</th>
                    <th class="num">measured</th>
                    <th></th>
                  </tr>
                </thead>
                <tbody>
                  ${c.lines.map(
                    (l) =>
                      html`<tr
                        data-line=${l.what}
                        data-predicted-bytes=${l.predictedBytes ?? ''}
                        data-measured-bytes=${l.measuredBytes ?? ''}
                      >
                        <td>${l.what}</td>
                        <td class="num">${b(l.predictedBytes)}</td>
                        <td class="num">${b(l.measuredBytes)}</td>
                        <td>${l.note ?? ''}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
          : nothing
      }
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-trace-memory': TpTraceMemory;
  }
}
