// <tp-chunk-figure>: the column/row pair's chunk schedules, rank by stage: the chunk on the ring and the GEMM chunk beside it.
import { LitElement, css, html, nothing, type TemplateResult } from 'lit';
import { customElement, property } from 'lit/decorators.js';
import type { ChunkStage } from '../../parallel/tp-overlap.ts';
import type { ChunksFigure } from './classroom-figures.ts';
import { rankColor } from './classroom-style.ts';

/**
 * `<tp-chunk-figure .figure=${f}>`: two grids, one row per rank and one column per stage. The
 * gate/up grid (all-gather, then GEMM) and the down grid (GEMM, then reduce-scatter): in each cell
 * the chunk on the ring (`.comm[data-chunk]`, its ring steps as the pieces sent to r + 1 and
 * received from r − 1, `.piece[data-dir][data-block][data-chunk]`, tinted by the rank the piece
 * belongs to) and the chunk the GEMM multiplies (`.gemm[data-chunk]`).
 */
@customElement('tp-chunk-figure')
export class TpChunkFigure extends LitElement {
  static override styles = css`
    :host {
      display: block;
      font-size: 0.8em;
    }
    h4 {
      margin: 8px 0 4px;
      font-size: 1em;
    }
    table {
      border-collapse: collapse;
      margin-bottom: 8px;
    }
    th,
    td {
      border: 1px solid #ccd;
      padding: 3px 8px;
      vertical-align: top;
      text-align: left;
    }
    .comm,
    .gemm {
      display: block;
      white-space: nowrap;
    }
    .gemm {
      font-weight: 600;
    }
    .piece {
      display: inline-block;
      padding: 0 4px;
      margin: 1px 2px;
      border-radius: 3px;
      color: #fff;
    }
  `;

  @property({ attribute: false }) figure?: ChunksFigure;

  private cell(s: ChunkStage, rank: number, stage: number, what: 'all-gather' | 'reduce-scatter'): TemplateResult {
    const piece = (dir: 'send' | 'recv', p: { block: number; chunk: number }) =>
      html`<span
        class="piece"
        data-dir=${dir}
        data-block=${p.block}
        data-chunk=${p.chunk}
        style=${`background:${rankColor(p.block)}`}
        >${dir === 'send' ? '→' : '←'} ${p.block}.${p.chunk + 1}</span
      >`;
    return html`<td data-rank=${rank} data-stage=${stage}>
      ${
        s.comm
          ? html`<span class="comm" data-chunk=${s.comm.chunk}
              >${what} chunk ${s.comm.chunk + 1}:
              ${s.comm.steps.map((k) => html`${piece('send', k.send)}${piece('recv', k.recv)}`)}</span
            >`
          : nothing
      }
      ${s.multiply !== undefined ? html`<span class="gemm" data-chunk=${s.multiply}>GEMM chunk ${s.multiply + 1}</span>` : nothing}
    </td>`;
  }

  private grid(
    title: string,
    stages: readonly (readonly ChunkStage[])[],
    what: 'all-gather' | 'reduce-scatter',
    pattern: string,
  ): TemplateResult {
    const n = stages[0]?.length ?? 0;
    return html`<h4>${title}</h4>
      <table data-pattern=${pattern}>
        <tr>
          <th></th>
          ${[...Array(n).keys()].map((i) => html`<th>stage ${i + 1}</th>`)}
        </tr>
        ${stages.map(
          (row, r) =>
            html`<tr>
              <th style=${`color:${rankColor(r)}`}>rank ${r}</th>
              ${row.map((s, i) => this.cell(s, r, i, what))}
            </tr>`,
        )}
      </table>`;
  }

  protected override render(): TemplateResult {
    const f = this.figure;
    if (!f) return html``;
    return html`<figure>
      <figcaption>${f.title} (→ b.j: piece of rank b's tokens in chunk j sent to the next rank; ← received)</figcaption>
      ${this.grid('gate/up (ColumnParallelLinear): all-gather chunk j, then its GEMM', f.gather, 'all-gather', 'gather-gemm')}
      ${this.grid('down (RowParallelLinear): GEMM chunk j, then its reduce-scatter', f.reduce, 'reduce-scatter', 'gemm-reduce-scatter')}
    </figure>`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-chunk-figure': TpChunkFigure;
  }
}
