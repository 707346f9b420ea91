// <tp-classroom-moe>: the classroom's MoE steps, one at a time, with the float64 block's values on the ranks' own tokens and each count checked against the ranks' run.
import { LitElement, css, html, nothing, type TemplateResult } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import type { MoeRun, MoeRunArgs } from '../../session/moe-run.ts';
import type { MoeLayerRun } from '../../session/moe-layer-run.ts';
import { panelStyles } from '../shared/page-style.ts';
import { classroomStyles } from './classroom-style.ts';
import { moeRunSteps, type MoeStep, type MoeStepCheck } from './moe-steps.ts';
import { stepSlides } from './step-slides.ts';

/**
 * `<tp-classroom-moe .args=${a} .run=${r}>`: steps through moeRunSteps(a, r) — router and top-k,
 * permutation, who sends what, the grouped GEMM, the combine, the aux loss, M036 — each with its
 * table and its checks against the run (`div.check[data-pass]`, the two sides in `data-step` and
 * `data-run`). `status` is shown while there is no run.
 */
@customElement('tp-classroom-moe')
export class TpClassroomMoe extends LitElement {
  static override styles = [
    panelStyles,
    classroomStyles,
    css`
      table.values {
        border-collapse: collapse;
        font-size: 0.8em;
        margin: 0.4em 0;
      }
      table.values td,
      table.values th {
        border: 1px solid #c7d0dc;
        padding: 0.15em 0.5em;
        text-align: right;
        font-variant-numeric: tabular-nums;
      }
      table.values td:last-child {
        text-align: left;
      }
    `,
  ];

  @property({ attribute: false }) args?: MoeRunArgs;
  @property({ attribute: false }) run?: MoeRun | MoeLayerRun;
  /** Zero-based step. */
  @property({ type: Number, reflect: true }) step = 0;
  @property() status = '';

  @state() private error = '';
  private shown: { run: MoeRun | MoeLayerRun; steps: readonly MoeStep[] } | undefined;
  private asked: MoeRun | MoeLayerRun | undefined;

  /** The steps of the shown run (empty before it is in). */
  get steps(): readonly MoeStep[] {
    return this.shown && this.shown.run === this.run ? this.shown.steps : [];
  }

  protected override willUpdate(): void {
    const r = this.run;
    if (!r || !this.args || r === this.asked) return;
    this.asked = r;
    try {
      this.shown = { run: r, steps: moeRunSteps(this.args, r) };
      this.error = '';
    } catch (e) {
      this.shown = undefined;
      this.error = e instanceof Error ? e.message : String(e);
    }
  }

  private check(k: MoeStepCheck): TemplateResult {
    return html`<div class="check" data-pass=${String(k.pass)} data-step=${k.step.join(' ')} data-run=${k.run.join(' ')}>
      <span class=${k.pass ? 'pass' : 'fail'}>${k.pass ? '✓' : '✗'}</span> ${k.label}: block ${k.step.join(' · ')}
      ${k.pass ? '=' : '≠'} ranks ${k.run.join(' · ')}
    </div>`;
  }

  override render(): TemplateResult {
    const steps = this.steps;
    if (steps.length === 0)
      return html`<p class="status" aria-live="polite" role=${this.error ? 'alert' : 'status'}>
        ${this.error ? `The MoE steps failed: ${this.error}` : this.status || 'waiting for the MoE run…'}
      </p>`;
    const i = Math.max(0, Math.min(this.step, steps.length - 1));
    const s = steps[i]!;
    return stepSlides({
      name: 'moe',
      noun: 'MoE step',
      steps,
      i,
      status: this.status,
      go: (k) => void (this.step = Math.max(0, Math.min(steps.length - 1, k))),
      body: html`<section data-step-id=${s.id}>
        <h2 class="step-title">${s.title}</h2>
        <p class="text">${s.text}</p>
        ${s.checks.length ? html`<div class="checks">${s.checks.map((k) => this.check(k))}</div>` : nothing}
        <table class="values">
          <tr>
            ${s.head.map((x) => html`<th>${x}</th>`)}
          </tr>
          ${s.rows.map((row) => html`<tr>${row.map((v) => html`<td>${v}</td>`)}</tr>`)}
        </table>
      </section>`,
    });
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-classroom-moe': TpClassroomMoe;
  }
}
