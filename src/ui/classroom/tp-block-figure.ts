// <tp-block-figure>: tensors as blocks whose sides follow their shapes, one row per rank (D3/SVG).
import * as d3 from 'd3';
import { LitElement, html, type TemplateResult } from 'lit';
import { customElement, property } from 'lit/decorators.js';
import type { BlockFigure, BlockSpec, RowOp } from './classroom-figures.ts';
import { figureStyles, rankColor } from './classroom-style.ts';

const FONT = 22; // block labels, px at scale 1: legible from the back of a room on a 1920-px projector
const SMALL = 19;
const GUTTER = 120; // "rank r" column
const GAP = 26;
const OP_W = 44;

/** Width a label of `n` characters takes at `size` px (a sans-serif's average advance ≈ 0.58 em). */
const textWidth = (n: number, size: number): number => n * size * 0.58;

/** The pixels per element for a figure: its blocks fit ~1300 × 440 px, never above 14 px per element. */
export function blockScale(f: BlockFigure): number {
  const blocks = (terms: BlockFigure['rows'][number]['terms']) =>
    terms.filter((x): x is BlockSpec => typeof x !== 'string');
  const tall = f.rows.reduce((s, r) => s + Math.max(...blocks(r.terms).map((b) => b.rows)), 0);
  const wide = Math.max(...f.rows.map((r) => blocks(r.terms).reduce((s, b) => s + b.cols, 0)));
  return Math.max(3, Math.min(14, 440 / tall, 1300 / wide));
}

/**
 * `<tp-block-figure .figure=${f}>`: each row is one rank; each tensor a rectangle of rows × cols
 * elements at one scale (so [h, f/t] is visibly narrower than [h, f]), filled in its rank's colour
 * (`rect.block` with `data-rank`, `data-rows`, `data-cols`), named above and shaped below
 * (`[s, f/t] 8×8`); a GEMM row ends with its local M, N, K (`text.mnk`).
 */
@customElement('tp-block-figure')
export class TpBlockFigure extends LitElement {
  static override styles = figureStyles;

  @property({ attribute: false }) figure?: BlockFigure;

  protected override render(): TemplateResult {
    return html`<svg></svg>`;
  }

  protected override updated(): void {
    const svg = this.renderRoot.querySelector('svg');
    if (svg && this.figure) draw(svg, this.figure);
  }
}

function draw(svg: SVGSVGElement, f: BlockFigure): void {
  const u = blockScale(f);
  const root = d3.select(svg).attr('role', 'img').attr('aria-label', f.title);
  root.selectAll('*').remove();
  root
    .append('text')
    .attr('class', 'title')
    .attr('x', 0)
    .attr('y', FONT)
    .attr('font-size', FONT)
    .attr('font-weight', 600)
    .text(f.title);
  let y = FONT + 16;
  let width = 0;
  for (const row of f.rows) {
    const blocks = row.terms.filter((x): x is BlockSpec => typeof x !== 'string');
    const h = Math.max(...blocks.map((b) => b.rows)) * u;
    const top = y + FONT + 8; // block tops, under their names
    const g = root.append('g').attr('class', 'row').attr('data-rank', row.rank);
    const color = rankColor(row.rank);
    g.append('text')
      .attr('x', 0)
      .attr('y', top + h / 2 + FONT / 3)
      .attr('font-size', FONT)
      .attr('font-weight', 700)
      .attr('fill', color)
      .text(`rank ${row.rank}`);
    let x = GUTTER;
    for (const term of row.terms) {
      if (typeof term === 'string') {
        x += drawOp(g, term, x, top + h / 2);
        continue;
      }
      const bw = term.cols * u;
      const slot = Math.max(bw, textWidth(term.label.length, FONT), textWidth(term.dims.length + 8, SMALL));
      const bx = x + (slot - bw) / 2;
      const by = top + (h - term.rows * u) / 2;
      const c = rankColor(term.rank);
      g.append('text')
        .attr('class', 'name')
        .attr('x', x + slot / 2)
        .attr('y', by - 8)
        .attr('text-anchor', 'middle')
        .attr('font-size', FONT)
        .text(term.label);
      g.append('rect')
        .attr('class', 'block')
        .attr('data-rank', term.rank ?? 'all')
        .attr('data-rows', term.rows)
        .attr('data-cols', term.cols)
        .attr('data-label', term.label)
        .attr('x', bx)
        .attr('y', by)
        .attr('width', bw)
        .attr('height', term.rows * u)
        .attr('fill', c)
        .attr('fill-opacity', 0.55)
        .attr('stroke', c)
        .attr('stroke-width', 3)
        .append('title')
        .text(`${term.label}: ${term.dims} = [${term.rows}, ${term.cols}]`);
      g.append('text')
        .attr('class', 'dims')
        .attr('x', x + slot / 2)
        .attr('y', by + term.rows * u + SMALL + 4)
        .attr('text-anchor', 'middle')
        .attr('font-size', SMALL)
        .text(`${term.dims} ${term.rows}×${term.cols}`);
      x += slot + GAP;
    }
    if (row.gemm) {
      const { m, n, k } = row.gemm;
      g.append('text')
        .attr('class', 'mnk')
        .attr('x', x + 10)
        .attr('y', top + h / 2 + FONT / 3)
        .attr('font-size', FONT)
        .attr('font-weight', 600)
        .text(`M = ${m}, N = ${n}, K = ${k}`);
      x += 10 + textWidth(24, FONT);
    }
    width = Math.max(width, x);
    y = top + h + SMALL + 24;
  }
  root.attr('width', width).attr('height', y).attr('viewBox', `0 0 ${width} ${y}`);
}

/** Draws an operator centred at (x + OP_W/2, cy); returns the width it takes. */
function drawOp(g: d3.Selection<SVGGElement, unknown, null, undefined>, op: RowOp, x: number, cy: number): number {
  g.append('text')
    .attr('class', 'op')
    .attr('x', x + OP_W / 2 - GAP / 2)
    .attr('y', cy + 12)
    .attr('text-anchor', 'middle')
    .attr('font-size', 36)
    .attr('font-weight', 700)
    .text(op);
  return OP_W;
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-block-figure': TpBlockFigure;
  }
}
