// <tp-chunk-figure>: the column/row pair's chunk schedules, rank by stage: the GEMM chunk and the chunks sent and received beside it.
import { LitElement, css, html, nothing, type TemplateResult } from 'lit';
import { customElement, property } from 'lit/decorators.js';
import { spChunking, type ChunkStage } from '../../parallel/tp-overlap.ts';
import type { ChunksFigure } from './classroom-figures.ts';
import { rankColor } from './classroom-style.ts';

/**
 * `<tp-chunk-figure .figure=${f}>`: two grids, one row per rank and one column per stage. The
 * gate/up grid (all-gather + GEMM) and the down grid (GEMM + reduce-scatter), in ring order: in
 * each cell the pieces of the GEMM chunk that starts there (`.gemm[data-chunk]`, space-separated
 * when a chunk is several shards, c < t) and the pieces sent to r + 1 and received from r − 1
 * (`.piece[data-dir][data-chunk]`), tinted by the rank whose shard holds them.
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

  private cell(s: ChunkStage, rank: number, stage: number, m: number): TemplateResult {
    // Chunk j lies in rank ⌊j/m⌋'s shard: tinted by that rank, written "owner.piece".
    const name = (j: number): string => (m === 1 ? `${Math.floor(j / m)}` : `${Math.floor(j / m)}.${(j % m) + 1}`);
    const piece = (dir: 'send' | 'recv', j: number) =>
      html`<span
        class="piece"
        data-dir=${dir}
        data-chunk=${j}
        style=${`background:${rankColor(Math.floor(j / m))}`}
        >${dir === 'send' ? '→' : '←'} ${name(j)}</span
      >`;
    return html`<td data-rank=${rank} data-stage=${stage}>
      ${
        s.multiply !== undefined
          ? html`<span class="gemm" data-chunk=${s.multiply.join(' ')}>GEMM ${s.multiply.map(name).join(' + ')}</span>`
          : nothing
      }
      ${
        s.send !== undefined && s.recv !== undefined
          ? html`<span class="comm">${piece('send', s.send)}${piece('recv', s.recv)}</span>`
          : nothing
      }
    </td>`;
  }

  private grid(title: string, stages: readonly (readonly ChunkStage[])[], m: number, pattern: string): TemplateResult {
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
              ${row.map((s, i) => this.cell(s, r, i, m))}
            </tr>`,
        )}
      </table>`;
  }

  protected override render(): TemplateResult {
    const f = this.figure;
    if (!f) return html``;
    const m = spChunking(f.t, f.chunks).rounds;
    return html`<figure>
      <figcaption>
        ${f.title} (a chunk is named by the rank whose tokens it holds${m > 1 ? ' and its piece' : ''}; → sent to the
        next rank, ← received from the one before)
      </figcaption>
      ${this.grid('gate/up (ColumnParallelLinear): all-gather + GEMM, own chunk first', f.gather, m, 'gather-gemm')}
      ${this.grid('down (RowParallelLinear): GEMM + reduce-scatter, own block last', f.reduce, m, 'gemm-reduce-scatter')}
    </figure>`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-chunk-figure': TpChunkFigure;
  }
}
