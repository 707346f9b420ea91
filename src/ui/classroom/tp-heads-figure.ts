// <tp-heads-figure>: each rank's linear_qkv columns, and the query heads and KV group its attention reads (D3/SVG).
import * as d3 from 'd3';
import { LitElement, html, type TemplateResult } from 'lit';
import { customElement, property } from 'lit/decorators.js';
import type { HeadsFigure } from './classroom-figures.ts';
import { figureStyles, rankColor } from './classroom-style.ts';

const FONT = 22;
const GUTTER = 120;
const CELL_W = 150;
const CELL_H = 48;
/** Width of one head's d columns in the linear_qkv strip. */
const SLICE_W = 90;

/**
 * `<tp-heads-figure .figure=${f}>`: one row per rank. Left, the linear_qkv output columns the rank
 * computes (`rect.slice`, `data-kind` q/k/v, width ∝ columns; a piece cut by the even split is
 * labelled with its share of d); right, the query heads (`rect.head`, `data-head`) and the KV
 * group (`rect.kv`, `data-group`) its attention reads — taken, when groups < t, from the all-gathered
 * QKV (the row says which group block). Every box in the rank's colour.
 */
@customElement('tp-heads-figure')
export class TpHeadsFigure extends LitElement {
  static override styles = figureStyles;

  @property({ attribute: false }) figure?: HeadsFigure;

  protected override render(): TemplateResult {
    return html`<svg></svg>`;
  }

  protected override updated(): void {
    const svg = this.renderRoot.querySelector('svg');
    const f = this.figure;
    if (!svg || !f) return;
    const root = d3.select(svg).attr('role', 'img').attr('aria-label', f.title);
    root.selectAll('*').remove();
    root.append('text').attr('x', 0).attr('y', FONT).attr('font-size', FONT).attr('font-weight', 600).text(f.title);
    const top = FONT + 18;
    let width = 0;
    for (let r = 0; r < f.t; r++) {
      const y = top + r * (CELL_H + 16);
      const color = rankColor(r);
      const g = root.append('g').attr('class', 'heads-row').attr('data-rank', r);
      g.append('text')
        .attr('x', 0)
        .attr('y', y + CELL_H / 2 + FONT / 3)
        .attr('font-size', FONT)
        .attr('font-weight', 700)
        .attr('fill', color)
        .text(`rank ${r}`);
      // The rank's even slice of linear_qkv's columns, as its pieces.
      const slice = f.picture.slices[r]?.pieces ?? [];
      let x = GUTTER;
      for (const p of slice) {
        const w = (p.cols / p.of) * SLICE_W;
        const name = p.kind === 'q' ? `q${p.head}` : `${p.kind}${p.group}`;
        g.append('rect')
          .attr('class', 'slice')
          .attr('data-kind', p.kind)
          .attr('data-rank', r)
          .attr('x', x)
          .attr('y', y)
          .attr('width', w)
          .attr('height', CELL_H)
          .attr('fill', color)
          .attr('fill-opacity', p.kind === 'q' ? 0.45 : 0.2)
          .attr('stroke', color)
          .attr('stroke-width', 2);
        g.append('text')
          .attr('x', x + w / 2)
          .attr('y', y + CELL_H / 2 + 7)
          .attr('text-anchor', 'middle')
          .attr('font-size', FONT - 4)
          .text(p.cols < p.of ? `${name} ${p.cols}/${p.of}` : name);
        x += w;
      }
      const block = f.picture.blocks?.[r];
      g.append('text')
        .attr('x', x + 12)
        .attr('y', y + CELL_H / 2 + 7)
        .attr('font-size', FONT - 4)
        .text(block === undefined ? '→' : `→ all-gather → block ${block} →`);
      const reads = x + (block === undefined ? 50 : 300);
      const boxes = [
        ...f.picture.heads
          .filter((h) => h.rank === r)
          .map((h) => ({ cls: 'head', key: h.head, text: `q head ${h.head}` })),
        ...f.picture.groups
          .filter((k) => k.ranks.includes(r))
          .map((k) => ({ cls: 'kv', key: k.group, text: `KV group ${k.group}` })),
      ];
      boxes.forEach((b, i) => {
        const x = reads + i * (CELL_W + 24) + (b.cls === 'kv' ? 30 : 0);
        g.append('rect')
          .attr('class', b.cls)
          .attr(b.cls === 'head' ? 'data-head' : 'data-group', b.key)
          .attr('data-rank', r)
          .attr('x', x)
          .attr('y', y)
          .attr('width', CELL_W + (b.cls === 'kv' ? 40 : 0))
          .attr('height', CELL_H)
          .attr('rx', 6)
          .attr('fill', color)
          .attr('fill-opacity', b.cls === 'head' ? 0.6 : 0.25)
          .attr('stroke', color)
          .attr('stroke-width', 3)
          .attr('stroke-dasharray', b.cls === 'kv' ? '8 4' : null);
        g.append('text')
          .attr('x', x + (CELL_W + (b.cls === 'kv' ? 40 : 0)) / 2)
          .attr('y', y + CELL_H / 2 + 7)
          .attr('text-anchor', 'middle')
          .attr('font-size', FONT - 2)
          .text(b.text);
        width = Math.max(width, x + CELL_W + 60);
      });
    }
    const height = top + f.t * (CELL_H + 16);
    root.attr('width', width).attr('height', height).attr('viewBox', `0 0 ${width} ${height}`);
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-heads-figure': TpHeadsFigure;
  }
}
