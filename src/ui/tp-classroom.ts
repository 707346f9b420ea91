// <tp-classroom>: Column/Row parallel step by step on the classroom preset, with the ranks' real numbers.
import { LitElement, html, nothing, type PropertyValues, type TemplateResult } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import {
  attentionPicture,
  classroomDegree,
  classroomSteps,
  type ClassroomCollective,
  type ClassroomRuns,
  type ClassroomStep,
} from '../parallel/classroom.ts';
import { configFromPreset, presets, type LayerConfig } from '../parallel/config.ts';
import { legalTpDegrees } from '../parallel/validate.ts';
import { createLayerPool, type PoolLender } from '../ranks/layer-run.ts';
import { loadClassroomRuns } from './classroom-data.ts';
import { matrixGrid } from './classroom-matrix.ts';
import { classroomStyles, rankColor } from './classroom-style.ts';
import { panelStyles } from './page-style.ts';

const opWords: Record<ClassroomCollective['op'], string> = {
  'all-reduce': 'all-reduce',
  'all-gather': 'all-gather',
  'reduce-scatter': 'reduce-scatter',
  identity: 'no communication (identity)',
};

/**
 * `<tp-classroom tp="2">`: runs the classroom MLP (and attention) on `tp` real rank workers and
 * TP=1 on one, then steps through it: matrices per rank in that rank's colour with every number,
 * each step's collective with its bytes and Megatron function, and the checks against TP=1.
 * Next/Previous buttons and ArrowRight/ArrowLeft; fires `step-change` ({ step }) on every move.
 * Setting `runs` directly shows those runs without starting workers; setting `pools` borrows warm ones.
 */
@customElement('tp-classroom')
export class TpClassroom extends LitElement {
  static override styles = [panelStyles, classroomStyles];

  /** Requested TP degree (the classroom preset's legal degree at or below it is used). */
  @property({ type: Number }) tp = 2;
  /** Zero-based step index, reflected as `step`. */
  @property({ type: Number, reflect: true }) step = 0;
  /** The ranks' data; loaded from `tp` when not set from outside. */
  @property({ attribute: false }) runs?: ClassroomRuns;
  /** Lends warm rank workers (the page's runner); without it each load starts and stops its own. */
  @property({ attribute: false }) pools?: PoolLender;

  @state() private status = '';
  @state() private error = '';
  private loadToken = 0;
  private loadedFor = 0;

  private readonly onKey = (e: KeyboardEvent): void => {
    const target = e.composedPath()[0];
    if (target instanceof HTMLElement && /^(INPUT|SELECT|TEXTAREA)$/.test(target.tagName)) return;
    if (e.key === 'ArrowRight') this.go(1);
    else if (e.key === 'ArrowLeft') this.go(-1);
  };

  override connectedCallback(): void {
    super.connectedCallback();
    window.addEventListener('keydown', this.onKey);
  }

  override disconnectedCallback(): void {
    window.removeEventListener('keydown', this.onKey);
    this.loadToken++;
    super.disconnectedCallback();
  }

  /** The steps of the current runs (empty while loading). */
  get steps(): ClassroomStep[] {
    return this.runs ? classroomSteps(this.runs) : [];
  }

  /** Moves by `delta` steps, clamped to the first and last. */
  go(delta: number): void {
    const n = this.steps.length;
    if (n === 0) return;
    const next = Math.max(0, Math.min(n - 1, this.step + delta));
    if (next === this.step) return;
    this.step = next;
    this.dispatchEvent(new CustomEvent('step-change', { detail: { step: next }, bubbles: true, composed: true }));
  }

  protected override willUpdate(changed: PropertyValues<this>): void {
    const t = classroomDegree(this.tp);
    if (changed.has('tp') && t !== this.loadedFor && (!this.runs || this.runs.config.tp !== t))
      void this.load(configFromPreset('classroom', { tp: t }));
  }

  private async load(c: LayerConfig): Promise<void> {
    const token = ++this.loadToken;
    this.loadedFor = c.tp;
    this.error = '';
    const say = (l: string): void => void (token === this.loadToken && (this.status = l));
    let pool;
    try {
      let runs: ClassroomRuns;
      if (this.pools) {
        this.status = `waiting for the ${c.tp} rank worker${c.tp > 1 ? 's' : ''}…`;
        runs = await this.pools.withPool(c.tp, (lent) => loadClassroomRuns(lent, c, undefined, say));
      } else {
        this.status = `starting ${c.tp} rank workers…`;
        pool = await createLayerPool(c.tp);
        runs = await loadClassroomRuns(pool, c, undefined, say);
      }
      if (token !== this.loadToken) return;
      this.runs = runs;
      this.step = Math.min(this.step, classroomSteps(runs).length - 1);
      this.status = '';
    } catch (e) {
      if (token === this.loadToken) {
        this.error = e instanceof Error ? e.message : String(e);
        this.status = '';
        this.loadedFor = 0;
      }
    } finally {
      await pool?.dispose();
    }
  }

  private collectiveLine(k: ClassroomCollective, t: number): TemplateResult {
    const bytes =
      k.op === 'identity' || t === 1
        ? 'no bytes'
        : `payload ${k.payloadBytes} B, each rank sends ${Math.round(k.ringBytesPerRank)} B on a ring`;
    return html`<div class="coll" data-op=${k.op}>
      <b>${opWords[k.op]}</b> — ${bytes} — <code>${k.megatron}</code>: ${k.why}
    </div>`;
  }

  private attention(c: LayerConfig): TemplateResult {
    const pic = attentionPicture(c);
    return html`<div class="heads">
        ${pic.heads.map((h) => html`<span class="head" data-rank=${h.rank} style="border-color:${rankColor(h.rank)};background:${rankColor(h.rank)}33">head ${h.head} → rank ${h.rank} (KV group ${h.group})</span>`)}
      </div>
      <div class="heads">
        ${pic.groups.map((g) => html`<span class="group" style="border-color:${rankColor(g.ranks.length === 1 ? g.ranks[0] : null)}">KV group ${g.group}: ${g.replicated ? 'a copy on' : 'held by'} rank${g.ranks.length > 1 ? 's' : ''} ${g.ranks.join(', ')}</span>`)}
      </div>`;
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
    if (!this.runs || steps.length === 0)
      return html`${note}
        <p class="status" aria-live="polite">${this.status || 'loading…'}</p>`;
    const s = steps[Math.min(this.step, steps.length - 1)];
    const c = this.runs.config;
    return html`${note}
      <div class="nav">
        <button id="prev" @click=${() => this.go(-1)} ?disabled=${this.step === 0}>← Previous</button>
        <button id="next" @click=${() => this.go(1)} ?disabled=${this.step >= steps.length - 1}>Next →</button>
        <span class="count"
          >step ${this.step + 1} of ${steps.length} · t = ${c.tp} · s = ${c.s}, h = ${c.h}, f = ${c.ffn} (arrow keys
          work too)</span
        >
        ${this.status ? html`<span class="status">${this.status}</span>` : nothing}
      </div>
      <section data-step-id=${s.id}>
        <h2 class="step-title">${s.title}</h2>
        <p class="text">${s.text}</p>
        <div class="megatron">Megatron: ${s.megatron.map((m, i) => html`${i ? ' · ' : ''}<code>${m}</code>`)}</div>
        ${s.collectives.length ? s.collectives.map((k) => this.collectiveLine(k, c.tp)) : html`<div class="coll" data-op="none"><b>no collective</b> — every input of this step is already on the rank that needs it.</div>`}
        ${
          s.checks.length
            ? html`<div class="checks">
                ${s.checks.map(
                  (k) =>
                    html`<div
                      class="check"
                      data-pass=${String(k.pass)}
                      data-max-abs=${String(k.maxAbs)}
                      data-tolerance=${String(k.tolerance)}
                    >
                      <span class=${k.pass ? 'pass' : 'fail'}>${k.pass ? '✓ equal' : '✗ differs'}</span> ${k.label}: max
                      |error| = ${k.maxAbs.toExponential(2)} (tolerance ${k.tolerance.toExponential(2)})
                    </div>`,
                )}
              </div>`
            : nothing
        }
        ${s.id === 'attention' ? this.attention(c) : nothing}
        <div class="panels">${s.panels.map(matrixGrid)}</div>
      </section>`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-classroom': TpClassroom;
  }
}
