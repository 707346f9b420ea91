// <tp-train-chart>: the training demo's loss curves (TP = t and TP = 1) and the norm-gain spread per step (D3/SVG).
import * as d3 from 'd3';
import { LitElement, css, html, type TemplateResult } from 'lit';
import { customElement, property } from 'lit/decorators.js';
import type { TrainPoint } from '../../session/classroom-train-run.ts';
import { rankColor } from './classroom-style.ts';

const W = 560,
  H = 340;
const M = { left: 78, right: 24, top: 40, bottom: 56 };
const FONT = 18;

interface Series {
  readonly name: string;
  readonly color: string;
  readonly dashed: boolean;
  readonly values: readonly number[];
}

/** One step chart: x = step 1…K, y linear from the data; each line's path carries `data-series`. */
function drawSteps(
  svg: SVGSVGElement,
  title: string,
  yLabel: string,
  K: number,
  series: readonly Series[],
  fromZero: boolean,
): void {
  const root = d3
    .select(svg)
    .attr('viewBox', `0 0 ${W} ${H}`)
    .attr('width', W)
    .attr('height', H)
    .attr('role', 'img')
    .attr('aria-label', title);
  root.selectAll('*').remove();
  const all = series.flatMap((s) => s.values);
  const x = d3
    .scaleLinear()
    .domain([1, Math.max(2, K)])
    .range([M.left, W - M.right]);
  const [lo, hi] = d3.extent(all) as [number | undefined, number | undefined];
  const y = d3
    .scaleLinear()
    .domain(fromZero ? [0, Math.max(hi ?? 1, 1e-9) * 1.1] : [(lo ?? 0) - 0.05, (hi ?? 1) + 0.05])
    .range([H - M.bottom, M.top])
    .nice();
  root.append('text').attr('x', M.left).attr('y', 24).attr('font-size', FONT).attr('font-weight', 600).text(title);
  root
    .append('g')
    .attr('transform', `translate(0,${H - M.bottom})`)
    .call(d3.axisBottom(x).ticks(Math.min(10, K)).tickFormat(d3.format('d')))
    .attr('font-size', FONT - 3);
  root
    .append('text')
    .attr('x', (M.left + W - M.right) / 2)
    .attr('y', H - 12)
    .attr('text-anchor', 'middle')
    .attr('font-size', FONT - 2)
    .text('step');
  root
    .append('g')
    .attr('transform', `translate(${M.left},0)`)
    .call(d3.axisLeft(y).ticks(6))
    .attr('font-size', FONT - 3);
  root
    .append('text')
    .attr('transform', `translate(18,${(H - M.bottom + M.top) / 2}) rotate(-90)`)
    .attr('text-anchor', 'middle')
    .attr('font-size', FONT - 2)
    .text(yLabel);
  const line = d3
    .line<number>()
    .x((_, i) => x(i + 1))
    .y((v) => y(v));
  series.forEach((s, i) => {
    const g = root.append('g').attr('data-series', s.name);
    g.append('path')
      .attr('d', line([...s.values]))
      .attr('fill', 'none')
      .attr('stroke', s.color)
      .attr('stroke-width', s.dashed ? 3 : 5)
      .attr('stroke-opacity', s.dashed ? 1 : 0.6)
      .attr('stroke-dasharray', s.dashed ? '8 6' : null);
    const ly = M.top + 8 + i * 24;
    g.append('line')
      .attr('x1', W - M.right - 190)
      .attr('x2', W - M.right - 160)
      .attr('y1', ly)
      .attr('y2', ly)
      .attr('stroke', s.color)
      .attr('stroke-width', 4)
      .attr('stroke-dasharray', s.dashed ? '8 6' : null);
    g.append('text')
      .attr('x', W - M.right - 154)
      .attr('y', ly + 6)
      .attr('font-size', FONT - 2)
      .text(s.name);
  });
}

/**
 * `<tp-train-chart .points=${p} tp="2">`: left, the mean loss per step of TP = t (wide, faint)
 * and TP = 1 (dashed, on top: where they coincide the dashes run inside the wide line); right,
 * the spread max |gᵣ − g₀| of the replicated RMSNorm gains across the t ranks.
 */
@customElement('tp-train-chart')
export class TpTrainChart extends LitElement {
  static override styles = css`
    :host {
      display: flex;
      flex-wrap: wrap;
      gap: 20px;
    }
    svg {
      font-family: system-ui, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif;
      max-width: 100%;
      height: auto;
    }
  `;

  @property({ attribute: false }) points: readonly TrainPoint[] = [];
  /** The steps the run will take (the x axis). */
  @property({ type: Number }) steps = 20;
  @property({ type: Number }) tp = 2;

  protected override render(): TemplateResult {
    return html`<svg id="loss"></svg><svg id="spread"></svg>`;
  }

  protected override updated(): void {
    const [loss, spread] = [...this.renderRoot.querySelectorAll('svg')];
    const p = this.points;
    drawSteps(
      loss,
      'Mean loss per step',
      'cross entropy (nats)',
      this.steps,
      [
        { name: `TP = ${this.tp}`, color: rankColor(0), dashed: false, values: p.map((q) => q.loss) },
        { name: 'TP = 1', color: '#111', dashed: true, values: p.map((q) => q.lossRef) },
      ],
      false,
    );
    drawSteps(
      spread,
      'Norm gains across ranks: max |gᵣ − g₀|',
      'spread',
      this.steps,
      [{ name: 'g1, g2 spread', color: rankColor(3), dashed: false, values: p.map((q) => q.spread) }],
      true,
    );
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-train-chart': TpTrainChart;
  }
}
