// A step's figures as elements: one lit element per figure kind.
import { html, type TemplateResult } from 'lit';
import type { StepFigure } from './classroom-figures.ts';
import './tp-block-figure.ts';
import './tp-heads-figure.ts';
import './tp-ring-figure.ts';
import './tp-classroom-run.ts';
import './tp-chunk-figure.ts';
import type { PoolLender } from '../../session/layer-run.ts';

/** The element that draws `f`: <tp-block-figure>, <tp-ring-figure>, <tp-heads-figure>, <tp-chunk-figure> or <tp-classroom-run> (which runs on `pools`). */
export function figureTemplate(f: StepFigure, pools?: PoolLender): TemplateResult {
  switch (f.kind) {
    case 'blocks':
      return html`<tp-block-figure .figure=${f}></tp-block-figure>`;
    case 'ring':
      return html`<tp-ring-figure .figure=${f} data-op=${f.op}></tp-ring-figure>`;
    case 'heads':
      return html`<tp-heads-figure .figure=${f}></tp-heads-figure>`;
    case 'run':
      return html`<tp-classroom-run .config=${f.config} .slow=${f.slow} .pools=${pools}></tp-classroom-run>`;
    case 'chunks':
      return html`<tp-chunk-figure .figure=${f}></tp-chunk-figure>`;
  }
}
