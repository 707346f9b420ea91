// <tp-ring-figure>: a ring collective between the rank rows, animated step by step on demand (D3/SVG).
import * as d3 from 'd3';
import { LitElement, css, html, type TemplateResult } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import type { RingFigure } from './classroom-figures.ts';
import { figureStyles, rankColor } from './classroom-style.ts';
import { collectiveName } from '../shared/timeline-format.ts';
import { LatestWins } from '../../session/latest-wins.ts';
import { ringPlay, type ChunkState, type RingPlay } from './ring-frames.ts';

const FONT = 22;
const GUTTER = 120;
const ROW_GAP = 22;
const MOVE_MS = 650;
const PAUSE_MS = 250;

const opVerb: Record<RingFigure['op'], string> = {
  allReduce: 'all-reduce: reduce-scatter then all-gather, 2(t−1) steps',
  reduceScatter: 'reduce-scatter: t−1 steps, rank r keeps the sum of chunk r',
  allGather: 'all-gather: t−1 steps, every rank ends with every chunk',
};

/** What a chunk reads as: "" (absent), "Σ" (a full sum, or every shard gathered), or its ranks "0+1". */
function chunkText(s: ChunkState, t: number, op: RingFigure['op']): string {
  if (s.from.length === 0) return '';
  if (op !== 'allGather' && s.from.length === t) return 'Σ';
  return op === 'allGather' ? `from ${s.from[0]}` : s.from.join('+');
}

/** A chunk's fill: a rank's colour for one contribution; darker grey as more ranks' sums arrive; white when absent. */
function chunkFill(s: ChunkState, t: number): string {
  if (s.from.length === 0) return '#ffffff';
  if (s.from.length === 1) return rankColor(s.from[0]);
  return d3.interpolateGreys(0.3 + (0.6 * s.from.length) / t);
}

/**
 * `<tp-ring-figure .figure=${f}>`: t rank rows, each holding the collective's [s, h] tensor cut
 * into the ring's t chunks (bands of rows, or of columns for a gather along the last dim); payload S and the bytes each rank sends. "play" animates the
 * ring: each step moves one chunk from every rank to its right neighbour (the last to rank 0),
 * added on arrival in the reduce-scatter phase and copied in the all-gather phase. The host
 * carries `data-ring-step` (steps done), `data-ring-steps` and `data-playing`.
 */
@customElement('tp-ring-figure')
export class TpRingFigure extends LitElement {
  static override styles = [
    figureStyles,
    css`
      .bar {
        display: flex;
        gap: 14px;
        align-items: center;
        flex-wrap: wrap;
        font-size: inherit;
      }
      button {
        font-size: inherit;
        padding: 4px 14px;
        cursor: pointer;
      }
    `,
  ];

  @property({ attribute: false }) figure?: RingFigure;
  /** Ring steps shown as done (0: the start). */
  @state() private done = 0;
  @state() private playing = false;
  private play?: RingPlay;
  private readonly plays = new LatestWins();

  /** The ring's steps for the current figure. */
  get steps(): number {
    return this.play?.frames.length ?? 0;
  }

  protected override willUpdate(): void {
    const f = this.figure;
    if (f && (this.play?.op !== f.op || this.play.t !== f.t)) {
      this.play = ringPlay(f.op, f.t);
      this.done = 0;
      this.playing = false;
      this.plays.drop();
    }
  }

  /** Runs the ring from its start to its end, one step per ~0.9 s; resolves when it has ended (or was replaced). */
  async playRing(): Promise<void> {
    if (!this.play || this.playing) return;
    const req = this.plays.start();
    this.playing = true;
    this.done = 0;
    await this.updateComplete;
    for (let k = 0; k < this.play.frames.length; k++) {
      await this.moveChunks(k);
      if (!req.current) return;
      this.done = k + 1;
      await this.updateComplete;
      await new Promise((r) => setTimeout(r, PAUSE_MS));
      if (!req.current) return;
    }
    this.playing = false;
  }

  override disconnectedCallback(): void {
    this.plays.drop();
    super.disconnectedCallback();
  }

  protected override render(): TemplateResult {
    const f = this.figure;
    if (!f) return html``;
    const n = this.steps;
    const phase = this.done > 0 && this.play ? this.play.frames[this.done - 1].phase : undefined;
    return html`<svg></svg>
      <div class="bar">
        ${
          f.t > 1
            ? html`<button class="play" @click=${() => void this.playRing()} ?disabled=${this.playing}>
                  ${this.done === n && n > 0 ? '↻ replay the ring' : '▶ play the ring'}
                </button>
                <span class="progress"
                  >step ${this.done} of ${n}${phase ? ` (${collectiveName(phase)} phase)` : ''}</span
                >`
            : html`<span>t = 1: one rank, nothing to send.</span>`
        }
      </div>`;
  }

  protected override updated(): void {
    this.dataset.ringStep = String(this.done);
    this.dataset.ringSteps = String(this.steps);
    this.dataset.playing = String(this.playing);
    const svg = this.renderRoot.querySelector('svg');
    if (svg && this.figure && this.play) this.draw(svg, this.figure, this.play);
  }

  /** Geometry: the chunk band of (rank, chunk) in SVG coordinates. */
  private geometry(f: RingFigure) {
    const u = Math.max(4, Math.min(16, 480 / (f.rows * f.t), 700 / f.cols));
    const bw = f.cols * u,
      bh = f.rows * u;
    const top = FONT * 3 + 30;
    const rowY = (r: number) => top + r * (bh + ROW_GAP);
    // Chunk c of n along a side of length `len`: [⌊c·n/t⌋, ⌊(c+1)·n/t⌋) of its n elements.
    const cut = (c: number, n: number, len: number) => ({
      at: (Math.floor((c * n) / f.t) * len) / n,
      size: ((Math.floor(((c + 1) * n) / f.t) - Math.floor((c * n) / f.t)) * len) / n,
    });
    const band = (r: number, c: number) => {
      if (f.along === 'cols') {
        const k = cut(c, f.cols, bw);
        return { x: GUTTER + k.at, y: rowY(r), w: k.size, h: bh };
      }
      const k = cut(c, f.rows, bh);
      return { x: GUTTER, y: rowY(r) + k.at, w: bw, h: k.size };
    };
    return { u, bw, bh, top, rowY, band, height: rowY(f.t) };
  }

  private draw(svg: SVGSVGElement, f: RingFigure, play: RingPlay): void {
    const G = this.geometry(f);
    const state = this.done === 0 ? play.start : play.frames[this.done - 1].after;
    const root = d3.select(svg).attr('role', 'img').attr('aria-label', f.title);
    root.selectAll('*').remove();
    root.append('text').attr('x', 0).attr('y', FONT).attr('font-size', FONT).attr('font-weight', 600).text(f.title);
    const factor = f.op === 'allReduce' ? '2(t−1)/t' : '(t−1)/t';
    const lines = [
      opVerb[f.op],
      `${f.dims} = ${f.rows}×${f.cols} float32: payload S = ${f.payloadBytes} B · each rank sends ${factor}·S = ${Math.round(f.ringBytesPerRank)} B`,
    ];
    lines.forEach((line, i) =>
      root
        .append('text')
        .attr('class', i === 1 ? 'bytes' : 'how')
        .attr('x', 0)
        .attr('y', FONT * 2 + 8 + i * (FONT + 4))
        .attr('font-size', FONT - 2)
        .text(line),
    );
    for (let r = 0; r < f.t; r++) {
      const g = root.append('g').attr('class', 'ring-row').attr('data-rank', r);
      g.append('text')
        .attr('x', 0)
        .attr('y', G.rowY(r) + G.bh / 2 + FONT / 3)
        .attr('font-size', FONT)
        .attr('font-weight', 700)
        .attr('fill', rankColor(r))
        .text(`rank ${r}`);
      for (let c = 0; c < f.t; c++) {
        const b = G.band(r, c);
        const s = state[r][c];
        g.append('rect')
          .attr('class', 'chunk')
          .attr('data-rank', r)
          .attr('data-chunk', c)
          .attr('data-from', s.from.join(','))
          .attr('x', b.x)
          .attr('y', b.y)
          .attr('width', b.w)
          .attr('height', b.h)
          .attr('fill', chunkFill(s, f.t))
          .attr('fill-opacity', s.kept ? 0.85 : 0.15)
          .attr('stroke', rankColor(r))
          .attr('stroke-width', 2)
          .attr('stroke-dasharray', s.from.length ? null : '5 4');
        g.append('text')
          .attr('x', b.x + b.w / 2)
          .attr('y', b.y + b.h / 2 + 7)
          .attr('text-anchor', 'middle')
          .attr('font-size', Math.min(FONT, b.h - 2))
          .attr('fill', s.from.length > 1 || s.from.length === f.t ? '#fff' : '#111')
          .attr('opacity', s.kept ? 1 : 0.3)
          .text(chunkText(s, f.t, f.op));
      }
    }
    // The ring itself: r → r+1 down the right side, and the last rank back to rank 0.
    if (f.t > 1) {
      const x = GUTTER + G.bw + 30;
      const ring = root
        .append('g')
        .attr('class', 'links')
        .attr('stroke', '#555')
        .attr('fill', 'none')
        .attr('stroke-width', 2.5);
      for (let r = 0; r < f.t - 1; r++)
        ring
          .append('path')
          .attr('d', `M${x},${G.rowY(r) + G.bh * 0.6}L${x},${G.rowY(r + 1) + G.bh * 0.4}`)
          .attr('marker-end', 'url(#arrow)');
      ring
        .append('path')
        .attr(
          'd',
          `M${x},${G.rowY(f.t - 1) + G.bh * 0.6}C${x + 70},${G.rowY(f.t - 1) + G.bh}, ${x + 70},${G.rowY(0)}, ${x + 4},${G.rowY(0) + G.bh * 0.3}`,
        )
        .attr('marker-end', 'url(#arrow)');
      root
        .append('defs')
        .append('marker')
        .attr('id', 'arrow')
        .attr('viewBox', '0 0 10 10')
        .attr('refX', 8)
        .attr('refY', 5)
        .attr('markerWidth', 7)
        .attr('markerHeight', 7)
        .attr('orient', 'auto-start-reverse')
        .append('path')
        .attr('d', 'M0,0L10,5L0,10z')
        .attr('fill', '#555');
    }
    root.append('g').attr('class', 'moving');
    const textWidth = Math.max(f.title.length * FONT, ...[opVerb[f.op].length, 110].map((n) => n * (FONT - 2))) * 0.56;
    const width = Math.max(GUTTER + G.bw + 120, textWidth);
    root.attr('width', width).attr('height', G.height).attr('viewBox', `0 0 ${width} ${G.height}`);
  }

  /** Moves the chunks of step k from each sender's band to its receiver's (d3 transition); resolves when they land. */
  private moveChunks(k: number): Promise<void> {
    const f = this.figure!;
    const play = this.play!;
    const svg = this.renderRoot.querySelector('svg');
    if (!svg) return Promise.resolve();
    const G = this.geometry(f);
    const before = k === 0 ? play.start : play.frames[k - 1].after;
    const layer = d3.select(svg).select<SVGGElement>('g.moving');
    const moves = play.frames[k].transfers.map((x) => ({ ...x, a: G.band(x.from, x.chunk), b: G.band(x.to, x.chunk) }));
    const rects = layer
      .selectAll('rect')
      .data(moves)
      .join('rect')
      .attr('class', 'in-flight')
      .attr('x', (m) => m.a.x + 12)
      .attr('y', (m) => m.a.y)
      .attr('width', (m) => m.a.w - 24)
      .attr('height', (m) => m.a.h)
      .attr('fill', (m) => chunkFill(before[m.from][m.chunk], f.t))
      .attr('stroke', '#111')
      .attr('stroke-width', 2);
    return rects
      .transition()
      .duration(MOVE_MS)
      .ease(d3.easeCubicInOut)
      .attr('y', (m) => m.b.y)
      .end()
      .catch(() => undefined)
      .then(() => void layer.selectAll('rect').remove());
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-ring-figure': TpRingFigure;
  }
}
