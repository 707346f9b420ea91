// <tp-classroom-straggler>: the classroom layer run again with one rank slowed, its timeline with the waits, and each collective's straggler.
import { LitElement, css, html, nothing, type PropertyValues, type TemplateResult } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import type { PoolLender } from '../../session/layer-run.ts';
import { createLayerPool } from '../../session/pools.ts';
import {
  runClassroomStraggler,
  runClassroomStragglerOn,
  type ClassroomStragglerRun,
} from '../../session/classroom-straggler-run.ts';
import { panelStyles } from '../shared/page-style.ts';
import { formatMs } from '../shared/timeline-format.ts';
import type { StragglerFigure } from './classroom-figures.ts';
import '../timeline/tp-timeline.ts';

/**
 * `<tp-classroom-straggler .figure=${f}>`: runs the classroom layer on `f.t` rank workers with
 * `f.slow` (real extra dispatches), draws its timeline (the waits hatched, the verdict above) and
 * lists, per collective, the rank that entered last and how long the others waited. The host
 * carries `data-state` (running, done, error) and, when done, `data-straggler` (the verdict's rank).
 */
@customElement('tp-classroom-straggler')
export class TpClassroomStraggler extends LitElement {
  static override styles = [
    panelStyles,
    css`
      :host {
        display: block;
        font-size: inherit;
      }
      ul.calls {
        margin: 6px 0;
        padding-left: 1.2em;
      }
      .error {
        color: #c00;
      }
    `,
  ];

  /** What to run. */
  @property({ attribute: false }) figure?: StragglerFigure;
  /** Lends warm rank workers (the page's runner); without it the element starts and stops its own. */
  @property({ attribute: false }) pools?: PoolLender;
  /** The run, once done. */
  @state() result?: ClassroomStragglerRun;
  @state() private status = '';
  @state() private error = '';
  private token = 0;

  protected override willUpdate(changed: PropertyValues<this>): void {
    if (changed.has('figure') && this.figure) {
      const f = this.figure;
      const before = changed.get('figure') as StragglerFigure | undefined;
      if (!before || before.t !== f.t || before.slow.rank !== f.slow.rank || before.slow.factor !== f.slow.factor)
        void this.load(f);
    }
  }

  override disconnectedCallback(): void {
    this.token++;
    super.disconnectedCallback();
  }

  private async load(f: StragglerFigure): Promise<void> {
    const token = ++this.token;
    this.result = undefined;
    this.error = '';
    this.dataset.state = 'running';
    const say = (l: string): void => void (token === this.token && (this.status = l));
    let pool;
    try {
      let r: ClassroomStragglerRun;
      if (this.pools) r = await runClassroomStragglerOn(this.pools, f.t, f.slow, say);
      else {
        say(`starting ${f.t} rank workers…`);
        pool = await createLayerPool(f.t);
        r = await runClassroomStraggler(pool, f.slow, say);
      }
      if (token !== this.token) return;
      this.result = r;
      this.dataset.state = 'done';
      this.dataset.straggler = String(r.stragglers.verdict.straggler);
    } catch (e) {
      if (token !== this.token) return;
      this.error = e instanceof Error ? e.message : String(e);
      this.dataset.state = 'error';
    } finally {
      this.status = '';
      await pool?.dispose();
    }
  }

  private calls(r: ClassroomStragglerRun): TemplateResult {
    return html`<ul class="calls">
      ${r.stragglers.calls.map(({ key, result }) =>
        result.straggler === null
          ? html`<li data-op=${key.op} data-straggler="none"><code>${key.op}</code>: every rank entered together</li>`
          : html`<li data-op=${key.op} data-straggler=${result.straggler}>
              <code>${key.op}</code>: rank ${result.straggler} entered last, ${formatMs(result.lateMs)} after the first;
              ${result.waits.map((w, i) => html`${i ? ', ' : ''}rank ${w.rank} waited ${formatMs(w.t1 - w.t0)}`)}
            </li>`,
      )}
    </ul>`;
  }

  override render(): TemplateResult {
    const f = this.figure;
    if (!f) return html``;
    if (this.error) return html`<p class="error" role="alert">The straggler run failed: ${this.error}</p>`;
    const r = this.result;
    if (!r)
      return html`<p class="status" aria-live="polite">${this.status || 'running the layer with a slowed rank…'}</p>`;
    return html`<tp-timeline
        .timeline=${r.timeline}
        caption=${`t = ${f.t}, rank ${f.slow.rank} dispatches each kernel ${f.slow.factor}×: kernels timed here, collectives as measured on this machine's transport`}
      ></tp-timeline>
      ${r.oraclePass ? nothing : html`<p class="error">The slowed step no longer matches TP = 1.</p>`}
      ${this.calls(r)}`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-classroom-straggler': TpClassroomStraggler;
  }
}
