// <tp-mesh-classroom>: the classroom's pipeline and ZeRO-1 steps, one at a time, with the numbers the page's mesh run returned.
import { LitElement, css, html, type TemplateResult } from 'lit';
import { customElement, property } from 'lit/decorators.js';
import type { AdamHyper } from '../../reference/adam.ts';
import type { PipelineRunResult } from '../../session/pipeline-run.ts';
import { panelStyles } from '../shared/page-style.ts';
import { classroomStyles } from './classroom-style.ts';
import { meshSteps, type MeshFact, type MeshStep } from './mesh-steps.ts';
import { stepSlides } from './step-slides.ts';

const printed = (f: MeshFact, x: number): string =>
  f.format === 'count' ? String(x) : f.format === 'share' ? x.toFixed(3) : x.toPrecision(4);

/**
 * `<tp-mesh-classroom .result=${run} .adam=${hyper}>`: steps through the mesh run's pipeline steps
 * (p > 1) and ZeRO-1 steps (d > 1 with the distributed optimizer), built by meshSteps; each number
 * printed in its row and kept whole in the row's `data-values` (JSON) for checks. `status` is shown
 * while no result is there.
 */
@customElement('tp-mesh-classroom')
export class TpMeshClassroom extends LitElement {
  static override styles = [
    panelStyles,
    classroomStyles,
    css`
      table.facts td.v {
        font-variant-numeric: tabular-nums;
        font-family: ui-monospace, monospace;
      }
      table.facts {
        font-size: 0.8em;
      }
      table.facts td {
        padding: 0.15em 0.6em 0.15em 0;
        vertical-align: top;
      }
    `,
  ];

  @property({ attribute: false }) result?: PipelineRunResult;
  @property({ attribute: false }) adam?: AdamHyper;
  /** Zero-based step. */
  @property({ type: Number, reflect: true }) step = 0;
  @property() status = '';

  /** The steps of the current result (empty without one). */
  get steps(): MeshStep[] {
    return this.result && this.adam ? meshSteps(this.result, this.adam) : [];
  }

  private jump(i: number, n: number): void {
    this.step = Math.max(0, Math.min(n - 1, i));
  }

  private fact(f: MeshFact): TemplateResult {
    return html`<tr data-fact=${f.label} data-values=${JSON.stringify(f.values)}>
      <td>${f.label}</td>
      <td class="v">${f.values.map((x) => printed(f, x)).join('  ')}</td>
    </tr>`;
  }

  override render(): TemplateResult {
    const steps = this.steps;
    if (steps.length === 0)
      return html`<p class="status" aria-live="polite">
        ${this.status || 'The pipeline steps need p > 1; the ZeRO-1 steps need d > 1 with the distributed optimizer.'}
      </p>`;
    const i = Math.min(this.step, steps.length - 1);
    const s = steps[i]!;
    return stepSlides({
      name: 'mesh',
      noun: 'mesh step',
      steps,
      i,
      status: this.status,
      go: (k) => this.jump(k, steps.length),
      body: html`<section data-step-id=${s.id}>
        <h2 class="step-title">${s.title}</h2>
        <p class="text">${s.text}</p>
        <table class="facts">
          ${s.facts.map((f) => this.fact(f))}
        </table>
      </section>`,
    });
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-mesh-classroom': TpMeshClassroom;
  }
}
