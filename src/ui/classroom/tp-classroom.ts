// <tp-classroom>: Column/Row parallel step by step on the classroom preset: a figure per step, the ranks' real numbers, presenter mode.
import { stepWords } from './classroom-text.ts';
import { LitElement, html, nothing, type PropertyValues, type TemplateResult } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import {
  classroomDegree,
  classroomSteps,
  type ClassroomCheck,
  type ClassroomCollective,
  type ClassroomRuns,
  type ClassroomStep,
} from '../../parallel/classroom.ts';
import { configFromPreset, presets, type LayerConfig } from '../../parallel/config.ts';
import { legalTpDegrees } from '../../parallel/validate.ts';
import type { PoolLender } from '../../session/layer-run.ts';
import { createLayerPool } from '../../session/pools.ts';
import { LatestWins } from '../../session/latest-wins.ts';
import { loadClassroomRuns } from '../../session/classroom-data.ts';
import { figureTemplate } from './classroom-figure-view.ts';
import { stepFigures } from './classroom-figures.ts';
import { slideAction } from './classroom-keys.ts';
import { matrixGrid } from './classroom-matrix.ts';
import { classroomStyles } from './classroom-style.ts';
import { panelStyles } from '../shared/page-style.ts';
import './tp-classroom-train.ts';
import './tp-heatmap.ts';
import { collectiveName } from '../shared/timeline-format.ts';

/** The slide after the layer's steps: the training demo. */
const trainSlide = { id: 'train', title: '11 · Train across ranks: TP = t and TP = 1 on one loss curve' };

/**
 * `<tp-classroom tp="2">`: runs the classroom MLP (and attention) on `tp` real rank workers and
 * TP=1 on one, then steps through it: a figure per step (tensors as rank-tinted blocks, GEMMs
 * with local M, N, K, collectives as an animated ring), each matrix as a heatmap (or its numbers,
 * with the "numbers" switch), the checks against TP=1 as short lines, and last the training demo.
 * Keys: → ↓ Space PageDown next, ← ↑ PageUp previous, Home / End, F presenter mode (full screen);
 * an outline jumps to any step. Fires `step-change` ({ step }, zero-based) on every move.
 * Setting `runs` directly shows those runs without starting workers; setting `pools` borrows warm ones.
 */
@customElement('tp-classroom')
export class TpClassroom extends LitElement {
  static override styles = [panelStyles, classroomStyles];

  /** Requested TP degree (the classroom preset's legal degree at or below it is used). */
  @property({ type: Number }) tp = 2;
  /** Zero-based step index, reflected as `step`. */
  @property({ type: Number, reflect: true }) step = 0;
  /** Print every matrix's numbers instead of its heatmap. */
  @property({ type: Boolean, reflect: true }) numbers = false;
  /** Presenter mode: the classroom alone on the screen (full screen where the browser allows it), large type. */
  @property({ type: Boolean, reflect: true }) presenter = false;
  /** The ranks' data; loaded from `tp` when not set from outside. */
  @property({ attribute: false }) runs?: ClassroomRuns;
  /** Lends warm rank workers (the page's runner); without it each load starts and stops its own. */
  @property({ attribute: false }) pools?: PoolLender;

  @state() private status = '';
  @state() private error = '';
  private readonly loads = new LatestWins();
  private loadedFor = 0;

  private readonly onKey = (e: KeyboardEvent): void => {
    const target = e.composedPath()[0];
    const el = target instanceof HTMLElement ? target : undefined;
    const action = slideAction(e.key, el?.tagName ?? '', el instanceof HTMLInputElement ? el.type : '');
    if (!action || e.ctrlKey || e.metaKey || e.altKey) return;
    e.preventDefault();
    if (action === 'next') this.go(1);
    else if (action === 'prev') this.go(-1);
    else if (action === 'first') this.jump(0);
    else if (action === 'last') this.jump(this.stepCount - 1);
    else void this.togglePresenter();
  };

  private readonly onFullscreen = (): void => {
    if (!document.fullscreenElement && this.presenter) this.presenter = false;
  };

  override connectedCallback(): void {
    super.connectedCallback();
    window.addEventListener('keydown', this.onKey);
    document.addEventListener('fullscreenchange', this.onFullscreen);
  }

  override disconnectedCallback(): void {
    window.removeEventListener('keydown', this.onKey);
    document.removeEventListener('fullscreenchange', this.onFullscreen);
    this.loads.drop();
    super.disconnectedCallback();
  }

  /** The layer's steps of the current runs (empty while loading). */
  get steps(): ClassroomStep[] {
    return this.runs ? classroomSteps(this.runs) : [];
  }

  /** The slides: the layer's steps, then the training demo. */
  get stepCount(): number {
    return this.runs ? this.steps.length + 1 : 0;
  }

  /** Moves by `delta` steps, clamped to the first and last. */
  go(delta: number): void {
    this.jump(this.step + delta);
  }

  /** Shows step `i` (clamped) and fires `step-change` when it moved. */
  jump(i: number): void {
    const n = this.stepCount;
    if (n === 0) return;
    const next = Math.max(0, Math.min(n - 1, i));
    if (next === this.step) return;
    this.step = next;
    this.dispatchEvent(new CustomEvent('step-change', { detail: { step: next }, bubbles: true, composed: true }));
  }

  /** Enters or leaves presenter mode, asking the browser for full screen on entry. */
  async togglePresenter(): Promise<void> {
    this.presenter = !this.presenter;
    if (this.presenter) await this.requestFullscreen?.().catch(() => undefined);
    else if (document.fullscreenElement === this) await document.exitFullscreen().catch(() => undefined);
  }

  protected override willUpdate(changed: PropertyValues<this>): void {
    const t = classroomDegree(this.tp);
    if (changed.has('tp') && t !== this.loadedFor && (!this.runs || this.runs.config.tp !== t))
      void this.load(configFromPreset('classroom', { tp: t }));
  }

  private async load(c: LayerConfig): Promise<void> {
    this.loadedFor = c.tp;
    this.error = '';
    await this.loads.run({
      work: async (req) => {
        const say = (l: string): void => void (req.current && (this.status = l));
        if (this.pools) {
          say(`waiting for the ${c.tp} rank worker${c.tp > 1 ? 's' : ''}…`);
          return this.pools.withPool(c.tp, (lent) => loadClassroomRuns(lent, c, undefined, say));
        }
        say(`starting ${c.tp} rank workers…`);
        const pool = await createLayerPool(c.tp);
        try {
          return await loadClassroomRuns(pool, c, undefined, say);
        } finally {
          await pool.dispose();
        }
      },
      done: (runs) => {
        this.runs = runs;
        this.step = Math.min(this.step, this.stepCount - 1);
        this.status = '';
      },
      failed: (e) => {
        this.error = e instanceof Error ? e.message : String(e);
        this.status = '';
        this.loadedFor = 0;
      },
    });
  }

  private collectiveLine(k: ClassroomCollective, t: number): TemplateResult {
    const bytes =
      k.op === 'identity' || t === 1
        ? 'no bytes'
        : `payload ${k.payloadBytes} B, each rank sends ${Math.round(k.ringBytesPerRank)} B on a ring`;
    return html`<div class="coll" data-op=${k.op}>
      <b>${k.op === 'identity' ? 'no communication (identity)' : collectiveName(k.op)}</b> — ${bytes} —
      <code>${k.megatron}</code>: ${k.why}
    </div>`;
  }

  private checkLine(k: ClassroomCheck): TemplateResult {
    return html`<div
      class="check"
      data-pass=${String(k.pass)}
      data-max-abs=${String(k.maxAbs)}
      data-tolerance=${String(k.tolerance)}
    >
      <span class=${k.pass ? 'pass' : 'fail'}>${k.pass ? '✓' : '✗'}</span> ${k.label}: ${k.maxAbs.toExponential(1)}
      ${k.pass ? '≤' : '>'} ${k.tolerance.toExponential(1)}
    </div>`;
  }

  private outline(titles: readonly string[]): TemplateResult {
    return html`<nav class="outline" aria-label="steps">
      ${titles.map(
        (title, i) =>
          html`<button data-step=${i} class=${i === this.step ? 'current' : ''} @click=${() => this.jump(i)}>
            ${title}
          </button>`,
      )}
    </nav>`;
  }

  private slide(s: ClassroomStep, runs: ClassroomRuns): TemplateResult {
    const c = runs.config;
    const words = stepWords(s.id, c, runs.sp !== undefined);
    return html`<section data-step-id=${s.id}>
      <h2 class="step-title">${words.title}</h2>
      <div class="figures">${stepFigures(s.id, runs).map((f) => figureTemplate(f, this.pools))}</div>
      ${s.checks.length ? html`<div class="checks">${s.checks.map((k) => this.checkLine(k))}</div>` : nothing}
      <p class="text">${words.text}</p>
      <div class="megatron">Megatron: ${words.megatron.map((m, i) => html`${i ? ' · ' : ''}<code>${m}</code>`)}</div>
      ${
        s.collectives.length
          ? s.collectives.map((k) => this.collectiveLine(k, c.tp))
          : html`<div class="coll" data-op="none">
              <b>no collective</b> — every input of this step is already on the rank that needs it.
            </div>`
      }
      <div class="panels">
        ${s.panels.map((p) =>
          this.numbers
            ? matrixGrid(p)
            : html`<figure data-rank=${p.rank ?? 'all'} data-label=${p.label}>
                <figcaption>${p.label}<span class="dims">${p.dims}</span></figcaption>
                <tp-heatmap .panel=${p}></tp-heatmap>
              </figure>`,
        )}
      </div>
    </section>`;
  }

  override render(): TemplateResult {
    const t = classroomDegree(this.tp);
    const note =
      t !== this.tp
        ? html`<p class="status">
            The classroom preset (4 heads, 2 KV groups, FFN 32) allows t =
            ${legalTpDegrees(presets.classroom, true).join(', ')}; showing t = ${t}.
          </p>`
        : nothing;
    if (this.error)
      return html`${note}
        <p class="error" role="alert">The classroom run failed: ${this.error}</p>`;
    const steps = this.steps;
    const runs = this.runs;
    if (!runs || steps.length === 0)
      return html`${note}
        <p class="status" aria-live="polite">${this.status || 'loading…'}</p>`;
    const c = runs.config;
    const i = Math.min(this.step, this.stepCount - 1);
    const titles = [...steps.map((s) => stepWords(s.id, c, runs.sp !== undefined).title), trainSlide.title];
    return html`${note}
      <div class="nav">
        <button id="prev" @click=${() => this.go(-1)} ?disabled=${i === 0}>← Previous</button>
        <button id="next" @click=${() => this.go(1)} ?disabled=${i >= this.stepCount - 1}>Next →</button>
        <span class="count"
          >step ${i + 1} of ${this.stepCount} · t = ${c.tp} · s = ${c.s}, h = ${c.h}, f = ${c.ffn}</span
        >
        <label class="switch"
          ><input
            type="checkbox"
            data-control="numbers"
            .checked=${this.numbers}
            @change=${(e: Event) => (this.numbers = (e.target as HTMLInputElement).checked)}
          />
          numbers</label
        >
        <button id="present" @click=${() => void this.togglePresenter()}>
          ${this.presenter ? 'leave (F)' : 'present (F)'}
        </button>
        ${this.status ? html`<span class="status">${this.status}</span>` : nothing}
      </div>
      <div class="layout">
        ${this.outline(titles)}
        ${
          i < steps.length
            ? this.slide(steps[i], runs)
            : html`<section data-step-id=${trainSlide.id}>
                <h2 class="step-title">${trainSlide.title}</h2>
                <tp-classroom-train .tp=${c.tp} .pools=${this.pools}></tp-classroom-train>
              </section>`
        }
      </div>`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-classroom': TpClassroom;
  }
}
