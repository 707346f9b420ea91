// A step's figures as elements: one lit element per figure kind.
import { html, type TemplateResult } from 'lit';
import type { StepFigure } from './classroom-figures.ts';
import './tp-block-figure.ts';
import './tp-heads-figure.ts';
import './tp-ring-figure.ts';

/** The element that draws `f`: <tp-block-figure>, <tp-ring-figure> or <tp-heads-figure>. */
export function figureTemplate(f: StepFigure): TemplateResult {
  switch (f.kind) {
    case 'blocks':
      return html`<tp-block-figure .figure=${f}></tp-block-figure>`;
    case 'ring':
      return html`<tp-ring-figure .figure=${f} data-op=${f.op}></tp-ring-figure>`;
    case 'heads':
      return html`<tp-heads-figure .figure=${f}></tp-heads-figure>`;
  }
}
