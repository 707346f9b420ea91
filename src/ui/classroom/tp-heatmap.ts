// <tp-heatmap>: one matrix of the classroom as a colour-scaled grid with a legend and the value on hover (D3/SVG).
import * as d3 from 'd3';
import { LitElement, css, html, type TemplateResult } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import type { ClassroomPanel } from '../../parallel/classroom.ts';
import { rankColor } from './classroom-style.ts';
import { cellText } from './classroom-matrix.ts';
import { estimateTextWidth } from '../timeline/timeline-layout.ts';

const LEGEND_H = 54;
const LEGEND_FONT_PX = 16;
const legendTextWidth = estimateTextWidth(LEGEND_FONT_PX);

/** The symmetric colour domain of a matrix: ±max|v| (±1 for an all-zero matrix), so 0 is always white. */
export function divergingDomain(data: ArrayLike<number>): [number, number, number] {
  let m = 0;
  for (let i = 0; i < data.length; i++) m = Math.max(m, Math.abs(data[i]));
  m = m || 1;
  return [-m, 0, m];
}

/**
 * `<tp-heatmap .panel=${p}>`: the panel's [rows, cols] matrix as cells on a diverging scale
 * (blue negative, white 0, red positive; domain ±max|v|) with a legend; each cell (`rect.cell`)
 * keeps its float32 value in `data-value` and shows it on hover (title and the line under the map).
 */
@customElement('tp-heatmap')
export class TpHeatmap extends LitElement {
  static override styles = css`
    :host {
      display: inline-block;
    }
    svg {
      display: block;
      font-family: system-ui, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif;
    }
    .hover {
      font-family: ui-monospace, 'DejaVu Sans Mono', monospace;
      min-height: 1.3em;
    }
  `;

  @property({ attribute: false }) panel?: ClassroomPanel;
  @state() private hover = '';

  protected override render(): TemplateResult {
    return html`<svg></svg>
      <div class="hover">${this.hover || ' '}</div>`;
  }

  protected override updated(changed: Map<string, unknown>): void {
    if (!changed.has('panel')) return;
    const svg = this.renderRoot.querySelector('svg');
    const p = this.panel;
    if (!svg || !p) return;
    const [rows, cols] = [p.matrix.shape[0], p.matrix.shape[p.matrix.shape.length - 1]];
    const cell = Math.max(8, Math.min(26, 420 / cols, 300 / rows));
    const domain = divergingDomain(p.matrix.data);
    const color = d3.scaleDiverging(d3.interpolateRdBu).domain([domain[2], 0, domain[0]]); // red positive
    const w = Math.max(cols * cell, 240),
      h = rows * cell;
    const root = d3
      .select(svg)
      .attr('width', w + 6)
      .attr('height', h + LEGEND_H + 6)
      .attr('viewBox', `-3 -3 ${w + 6} ${h + LEGEND_H + 6}`);
    root.selectAll('*').remove();
    root
      .append('g')
      .attr('class', 'cells')
      .selectAll('rect')
      .data(Array.from(p.matrix.data))
      .join('rect')
      .attr('class', 'cell')
      .attr('data-value', (v) => String(v))
      .attr('x', (_, i) => (i % cols) * cell)
      .attr('y', (_, i) => Math.floor(i / cols) * cell)
      .attr('width', cell)
      .attr('height', cell)
      .attr('fill', (v) => color(v))
      .on('mouseenter', (_, v) => void (this.hover = `${p.label}: ${cellText(v)} (${v})`))
      .append('title')
      .text((v, i) => `[${Math.floor(i / cols)}, ${i % cols}] = ${v}`);
    root
      .append('rect')
      .attr('width', cols * cell)
      .attr('height', h)
      .attr('fill', 'none')
      .attr('stroke', rankColor(p.rank))
      .attr('stroke-width', 4);
    // Legend: the scale from −max to +max, inset by half its widest end label so the labels stay inside the svg.
    const lw = Math.min(w, 320);
    const tickFormat = d3.format('.2~f');
    const inset = Math.ceil(Math.max(...domain.map((v) => legendTextWidth(tickFormat(v)))) / 2);
    const x = d3
      .scaleLinear()
      .domain([domain[0], domain[2]])
      .range([inset, lw - inset]);
    const id = `grad-${Math.random().toString(36).slice(2)}`;
    const grad = root.append('defs').append('linearGradient').attr('id', id);
    for (let i = 0; i <= 10; i++)
      grad
        .append('stop')
        .attr('offset', `${i * 10}%`)
        .attr('stop-color', color(domain[0] + ((domain[2] - domain[0]) * i) / 10));
    const lg = root
      .append('g')
      .attr('class', 'legend')
      .attr('transform', `translate(0,${h + 10})`);
    lg.append('rect')
      .attr('x', inset)
      .attr('width', lw - 2 * inset)
      .attr('height', 14)
      .attr('fill', `url(#${id})`)
      .attr('stroke', '#999');
    lg.append('g')
      .attr('transform', 'translate(0,14)')
      .call(d3.axisBottom(x).tickValues(domain).tickFormat(tickFormat))
      .attr('font-size', LEGEND_FONT_PX);
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-heatmap': TpHeatmap;
  }
}
