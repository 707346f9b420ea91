// <tp-classroom-run>: a classroom step's own run of the layer on the rank workers, drawn as its timeline, with each collective's straggler.
import { LitElement, css, html, nothing, type PropertyValues, type TemplateResult } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import { formatRankSlowdown, type RankSlowdown } from '../../core/rank-slowdown.ts';
import type { LayerConfig } from '../../parallel/config.ts';
import type { PoolLender } from '../../session/layer-run.ts';
import { runClassroomLayerOn, type ClassroomLayerRun } from '../../session/classroom-layer-run.ts';
import { LatestWins } from '../../session/latest-wins.ts';
import { panelStyles } from '../shared/page-style.ts';
import { formatMs } from '../../core/format.ts';
import '../timeline/tp-timeline.ts';

/**
 * `<tp-classroom-run .config=${c} .slow=${s}>`: runs `config` on its t rank workers (with `slow`,
 * one rank doing f× the work), draws the step's timeline (waits hatched, the straggler verdict
 * above) and, when a rank is slowed, lists per collective the rank that entered last and how long
 * the others waited. The host carries `data-state` (running, done, error) and, when done,
 * `data-straggler` (the verdict's rank, or "null") and `data-oracle` (pass or fail).
 */
@customElement('tp-classroom-run')
export class TpClassroomRun extends LitElement {
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

  /** The layer configuration to run. */
  @property({ attribute: false }) config?: LayerConfig;
  /** The slowed rank and its factor, or null. */
  @property({ attribute: false }) slow: RankSlowdown | null = null;
  /** Lends warm rank workers (the page's runner); without it the element starts and stops its own. */
  @property({ attribute: false }) pools?: PoolLender;
  /** The run, once done. */
  @state() result?: ClassroomLayerRun;
  @state() private status = '';
  @state() private error = '';
  private readonly runs = new LatestWins();
  private loaded = '';

  protected override willUpdate(changed: PropertyValues<this>): void {
    if (!(changed.has('config') || changed.has('slow')) || !this.config) return;
    const key = JSON.stringify([this.config, this.slow]);
    if (key !== this.loaded) void this.load(this.config, this.slow, key);
  }

  override disconnectedCallback(): void {
    this.runs.drop();
    this.loaded = '';
    super.disconnectedCallback();
  }

  private async load(c: LayerConfig, slow: RankSlowdown | null, key: string): Promise<void> {
    this.loaded = key;
    this.result = undefined;
    this.error = '';
    this.dataset.state = 'running';
    await this.runs.run({
      work: (req) => runClassroomLayerOn(this.pools, c, slow, (l) => void (req.current && (this.status = l))),
      done: (r) => {
        this.result = r;
        this.dataset.straggler = String(r.stragglers.verdict.straggler);
        this.dataset.oracle = r.oraclePass ? 'pass' : 'fail';
        this.dataset.state = 'done';
      },
      failed: (e) => {
        this.error = e instanceof Error ? e.message : String(e);
        this.loaded = '';
        this.dataset.state = 'error';
      },
      settled: () => (this.status = ''),
    });
  }

  private calls(r: ClassroomLayerRun): TemplateResult {
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
    const c = this.config;
    if (!c) return html``;
    if (this.error) return html`<p class="error" role="alert">The run failed: ${this.error}</p>`;
    const r = this.result;
    if (!r) return html`<p class="status" aria-live="polite">${this.status || 'running the layer on the ranks…'}</p>`;
    const slow = r.slow ? ` · #slow=${formatRankSlowdown(r.slow)}` : '';
    return html`<tp-timeline
        .timeline=${r.timeline}
        caption=${`t = ${c.tp}${c.sp ? ' + SP' : ''}${c.tpOverlapChunks ? ` · ${c.tpOverlapChunks} chunks` : ''}${slow}: kernels timed here, collectives as measured on this machine's transport`}
      ></tp-timeline>
      ${r.oraclePass ? nothing : html`<p class="error">This step no longer matches TP = 1.</p>`}
      ${r.slow ? this.calls(r) : nothing}`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-classroom-run': TpClassroomRun;
  }
}
