// The frame of a classroom card's steps (a template, no state): previous / next, "step i of n", the outline, the shown step's body.
import { html, nothing, type TemplateResult } from 'lit';

/** What the frame shows: the steps' ids and titles, the shown one, where it stands, and how to move. */
export interface StepSlides {
  /** Names the card's buttons: `#${name}-prev`, `#${name}-next`, the outline's `button[data-outline=${name}]`. */
  readonly name: 'mesh' | 'moe';
  /** "mesh step", "MoE step". */
  readonly noun: string;
  readonly steps: readonly { readonly id: string; readonly title: string }[];
  readonly i: number;
  readonly status: string;
  readonly go: (k: number) => void;
  readonly body: TemplateResult;
}

/**
 * Previous / next buttons, the count and the status over an outline (a button per step,
 * `data-outline=${name}`, `data-step=${id}`) and the body.
 */
export function stepSlides(s: StepSlides): TemplateResult {
  const n = s.steps.length;
  return html`<div class="nav">
      <button id=${`${s.name}-prev`} @click=${() => s.go(s.i - 1)} ?disabled=${s.i === 0}>← Previous</button>
      <button id=${`${s.name}-next`} @click=${() => s.go(s.i + 1)} ?disabled=${s.i >= n - 1}>Next →</button>
      <span class="count">${s.noun} ${s.i + 1} of ${n}</span>
      ${s.status ? html`<span class="status">${s.status}</span>` : nothing}
    </div>
    <div class="layout">
      <nav class="outline" aria-label=${`${s.noun}s`}>
        ${s.steps.map(
          (x, k) =>
            html`<button data-outline=${s.name} data-step=${x.id} class=${k === s.i ? 'current' : ''} @click=${() => s.go(k)}>
              ${x.title}
            </button>`,
        )}
      </nav>
      ${s.body}
    </div>`;
}
