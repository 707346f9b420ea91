// <tp-app>: the page shell. The URL hash is the state; a change re-runs the layer; the last good view stays on errors.
import { LitElement, css, html, nothing } from 'lit';
import { customElement, state } from 'lit/decorators.js';
import { enableWebGpuHint } from '../../kernels/adapter.ts';
import { budgetRun, memoryBudget, type MemoryBudget } from '../../accounting/budget.ts';
import { legalTpDegrees, validateConfig } from '../../parallel/validate.ts';
import { chooseTransport } from '../../ranks/transport.ts';
import { placeIssues, type FieldIssue } from './field-issues.ts';
import { panelStyles } from '../shared/page-style.ts';
import { PlaygroundRunner, type PlaygroundResult } from '../../session/playground-runner.ts';
import { formatMs } from '../shared/timeline-format.ts';
import { machineChoice } from './machine-choice.ts';
import { presets } from '../../parallel/config.ts';
import {
  configOf,
  hashFromSettings,
  runKey,
  mainViews,
  settingsFromHash,
  sizeKeys,
  type MainView,
  type Settings,
} from './state.ts';
import type { SettingsChangeDetail } from './settings-change.ts';
import { clusterSizes } from './cluster-model-choice.ts';
import '../classroom/tp-classroom.ts';
import '../cluster/tp-cluster-panel.ts';
import '../cluster/tp-advisor-panel.ts';
import './tp-machine-controls.ts';
import './tp-controls.ts';
import './tp-exports.ts';
import '../gemm/tp-gemm-view.ts';
import './tp-oracle-badge.ts';
import './tp-shapes.ts';
import '../timeline/tp-timeline.ts';
import '../trace/tp-trace-view.ts';

/** The settings that change what runs (pass and view only change what is shown). */

const viewNames: Record<MainView, string> = {
  timeline: 'Timeline',
  classroom: 'Classroom',
  gemm: 'GEMM efficiency',
  trace: 'Measured trace',
};

const transportWords: Record<string, string> = {
  'sab-ring': 'the SharedArrayBuffer ring (shared memory + Atomics)',
  'message-port': 'the MessagePort ring (chunks transferred between workers)',
};

/**
 * `<tp-app>`: reads the settings from `location.hash` (and writes them back on every control
 * change, so each view is a link), validates, runs the layer through one PlaygroundRunner and shows
 * the timeline, shapes, oracle and exports. An invalid setting or a failed run leaves the last
 * good view on screen with the message next to its control. States where times come from, the
 * transport, and what is missing (WebGPU, cross-origin isolation).
 */
@customElement('tp-app')
export class TpApp extends LitElement {
  static override styles = [
    panelStyles,
    css`
      :host {
        font-size: 16px;
        background: #f7f9fc;
        min-height: 100vh;
      }
      header {
        display: flex;
        flex-wrap: wrap;
        align-items: center;
        gap: 8px 24px;
        padding: 10px 18px;
        background: #0b2b55;
        color: #fff;
      }
      h1 {
        font-size: 22px;
        margin: 0;
      }
      nav {
        display: flex;
        gap: 4px;
      }
      nav a {
        color: #dbe7f7;
        text-decoration: none;
        padding: 4px 10px;
        border-radius: 6px;
        font-weight: 600;
      }
      nav a[aria-current='page'] {
        background: #fff;
        color: #0b2b55;
      }
      .status {
        margin-left: auto;
        font-size: 15px;
        color: #f3f6fb;
        min-width: 18em;
      }
      .status[data-busy='true']::before {
        content: '';
        display: inline-block;
        width: 12px;
        height: 12px;
        margin-right: 8px;
        border: 3px solid #f2b632;
        border-top-color: transparent;
        border-radius: 50%;
        animation: spin 0.8s linear infinite;
        vertical-align: -2px;
      }
      @keyframes spin {
        to {
          transform: rotate(360deg);
        }
      }
      .layout {
        display: grid;
        grid-template-columns: 300px minmax(0, 1fr);
        gap: 14px;
        padding: 12px 18px;
      }
      aside {
        min-width: 0;
      }
      main {
        min-width: 0;
        display: flex;
        flex-direction: column;
        gap: 12px;
      }
      .card {
        background: #fff;
        border: 1px solid #d5dbe3;
        border-radius: 10px;
        padding: 10px 14px;
      }
      .banner {
        margin: 0 0 6px;
        padding: 6px 10px;
        border-radius: 6px;
        font-size: 15px;
      }
      .banner.warn {
        background: #fff4d6;
        border-left: 5px solid #c98a00;
      }
      .banner.error {
        background: #fdecee;
        border-left: 5px solid #a3000f;
        color: #5c0008;
      }
      .banner.info {
        background: #e8f0fb;
        border-left: 5px solid #2a6cc4;
      }
      .sources {
        margin: 0 0 6px;
        font-size: 15px;
      }
      .top {
        display: flex;
        flex-wrap: wrap;
        gap: 12px 24px;
        align-items: flex-start;
        justify-content: space-between;
      }
      .totals {
        font-size: 15px;
        flex: 1 1 360px;
      }
      tp-oracle-badge {
        flex: 0 1 auto;
      }
      .totals strong {
        font-size: 18px;
      }
      .stale {
        opacity: 0.55;
        transition: opacity 0.2s;
      }
      .panels {
        display: grid;
        grid-template-columns: minmax(0, 1fr) 440px;
        gap: 12px;
      }
      @media (max-width: 1600px) {
        .panels {
          grid-template-columns: 1fr;
        }
      }
    `,
  ];

  @state() private settings: Settings = settingsFromHash(location.hash).settings;
  @state() private hashIssues: readonly FieldIssue[] = [];
  /** Hash keys the page does not know: no control to show them beside, so a banner names them. */
  @state() private unknownKeys: readonly string[] = [];
  @state() private issues: readonly FieldIssue[] = [];
  @state() private notes: readonly FieldIssue[] = [];
  @state() private result: PlaygroundResult | undefined;
  /** Which machine the shown run's timeline describes (the caption's first words). */
  @state() private shownMachine = '';
  @state() private runError = '';
  @state() private busy = false;
  @state() private progress = '';
  private changed: keyof Settings | undefined;
  private shownKey = '';
  /** The hash of the run on screen, mirrored on the host as `data-shown` (with `data-busy`) for scripts and tests. */
  private shownHash = '';
  private running = false;
  private dirty = false;
  // Warm-ups between runs report progress too; only a run's lines replace the status.
  private readonly runner = new PlaygroundRunner((line) => {
    if (this.busy) this.progress = line;
  });
  private readonly onHash = (): void => this.apply();
  /** Aborts the run in flight (at its next phase) when the settings change what runs. */
  private inFlight: { key: string; abort: AbortController } | undefined;
  /** Checked before every run: the page budget and (once probed) this adapter's buffer limits. */
  private budget: MemoryBudget = memoryBudget((navigator as { deviceMemory?: number }).deviceMemory);

  /** What this browser offers: WebGPU with an adapter, none at all, or navigator.gpu without an adapter. */
  @state() private gpu: 'ok' | 'none' | 'no-adapter' = PlaygroundRunner.hasWebGpu() ? 'ok' : 'none';
  /** Resolves once the adapter probe has set `gpu` (runs wait for it). */
  private readonly probed = this.probeAdapter();

  private async probeAdapter(): Promise<void> {
    this.runner.budget = this.budget;
    if (this.gpu !== 'ok') return;
    const adapter = await navigator.gpu.requestAdapter().catch(() => null);
    if (!adapter) {
      this.gpu = 'no-adapter';
      this.runner.modelOnly = true;
      return;
    }
    const deviceMemory = (navigator as { deviceMemory?: number }).deviceMemory;
    this.runner.budget = this.budget = memoryBudget(deviceMemory, adapter.limits, "this adapter's");
  }

  override connectedCallback(): void {
    super.connectedCallback();
    window.addEventListener('hashchange', this.onHash);
    this.apply();
  }

  override disconnectedCallback(): void {
    window.removeEventListener('hashchange', this.onHash);
    void this.runner.dispose();
    super.disconnectedCallback();
  }

  /** Reads the hash, validates, and runs when what runs has changed. */
  private apply(): void {
    const { settings, messages } = settingsFromHash(location.hash);
    this.settings = settings;
    const known = (k: string): k is keyof Settings => Object.hasOwn(settings, k);
    this.hashIssues = messages.flatMap((m) => (known(m.key) ? [{ field: m.key, message: m.message }] : []));
    this.unknownKeys = messages.flatMap((m) => (known(m.key) ? [] : [m.message]));
    if (this.inFlight && this.inFlight.key !== runKey(settings))
      this.inFlight.abort.abort(new DOMException('the settings changed', 'AbortError'));
    if (settings.view !== 'trace') void this.schedule(); // the measured-trace view runs nothing
  }

  /** Runs the latest settings; changes made while a run is in flight coalesce into one more run. */
  private async schedule(): Promise<void> {
    if (this.running) {
      this.dirty = true;
      return;
    }
    this.running = true;
    try {
      await this.probed;
      do {
        this.dirty = false;
        await this.runOnce(this.settings);
      } while (this.dirty);
    } finally {
      this.running = false;
    }
  }

  private async runOnce(s: Settings): Promise<void> {
    const config = configOf(s);
    const v = validateConfig(config);
    this.notes = placeIssues(v.notes); // notes stay by their own control: moving them would shift the controls under the pointer
    const issues: FieldIssue[] = placeIssues(v.errors, this.changed);
    // Memory before any worker allocates (only for a valid config: the budget reads its shards).
    // A budget issue sits by the size the link or the user set (#b=100000 by b), else by the one that saves most.
    const set = (f: string): boolean => sizeKeys.some((k) => k === f && s[k] !== presets[s.preset][k]);
    if (v.ok)
      issues.push(
        ...placeIssues(
          budgetRun(config, this.budget).errors.map((e) => ({ ...e, field: e.fields.find(set) ?? e.field })),
          this.changed,
        ),
      );
    const machine = machineChoice(s);
    issues.push(...machine.issues);
    this.issues = issues;
    if (issues.length) return; // keep the last good view
    if (runKey(s) === this.shownKey && this.result) return;
    this.busy = true;
    this.progress = `running t = ${s.tp}${s.sp ? ' with SP' : ''}…`;
    const started = performance.now();
    const abort = new AbortController();
    this.inFlight = { key: runKey(s), abort };
    try {
      this.result = await this.runner.run(
        {
          config,
          comm: machine.comm,
          overlap: s.overlap,
          ...(machine.projection && { projection: machine.projection }),
        },
        abort.signal,
      );
      this.shownMachine = machine.label;
      this.shownKey = runKey(s);
      this.shownHash = hashFromSettings(s);
      this.runError = '';
      this.progress = `ran t = ${s.tp} in ${formatMs(performance.now() - started)}`;
      this.prewarm(s);
    } catch (e) {
      if (abort.signal.aborted) {
        this.progress = `stopped t = ${s.tp}: the settings changed`; // the loop in schedule() runs the new ones
      } else {
        this.runError = e instanceof Error ? e.message : String(e);
        this.progress = 'run failed';
      }
    } finally {
      this.inFlight = undefined;
      this.busy = false;
    }
  }

  /** Warms the legal degrees next to t (within 1…8) so the next TP change is a re-run. */
  private prewarm(s: Settings): void {
    const legal = legalTpDegrees(s, s.sp, 8);
    const i = legal.indexOf(s.tp);
    const near = [legal[i + 1], legal[i - 1]].filter((t): t is number => t !== undefined);
    this.runner.prewarm(configOf(s), near);
  }

  private onChange(e: CustomEvent<SettingsChangeDetail>): void {
    this.changed = e.detail.field;
    const hash = hashFromSettings(e.detail.settings);
    if (hash === location.hash) this.apply();
    else location.hash = hash; // hashchange → apply()
  }

  private setView(view: MainView): void {
    this.changed = 'view';
    location.hash = hashFromSettings({ ...this.settings, view });
  }

  protected override updated(): void {
    this.dataset.busy = String(this.busy);
    this.dataset.shown = this.shownHash;
  }

  protected override render() {
    const s = this.settings;
    const r = this.result;
    const stale = this.issues.length > 0 || !!this.runError || (r !== undefined && runKey(s) !== this.shownKey);
    return html`
      <header>
        <h1>Tensor-parallel playground</h1>
        <nav aria-label="views">
          ${mainViews.map(
            (v) =>
              html`<a
                href=${hashFromSettings({ ...s, view: v })}
                aria-current=${v === s.view ? 'page' : 'false'}
                @click=${(e: Event) => {
                  e.preventDefault();
                  this.setView(v);
                }}
                >${viewNames[v]}</a
              >`,
          )}
        </nav>
        <div class="status" role="status" aria-live="polite" data-busy=${String(this.busy)} data-status>
          ${s.view === 'trace' ? 'no layer run in this view' : this.progress || 'starting…'}
        </div>
      </header>
      <div class="layout">
        <aside>
          <tp-controls
            .settings=${s}
            .issues=${[...this.hashIssues, ...this.issues]}
            .notes=${this.notes}
            @settings-change=${this.onChange}
          ></tp-controls>
          <tp-machine-controls
            .settings=${s}
            .issues=${[...this.hashIssues, ...this.issues]}
            @settings-change=${this.onChange}
          ></tp-machine-controls>
        </aside>
        <main>
          ${
            s.view === 'trace'
              ? html`<tp-trace-view class="card"></tp-trace-view>`
              : html`${this.renderBanners(stale)}
                ${r ? this.renderRun(r, s, stale) : html`<div class="card"><p class="note">${this.issues.length ? 'Fix the setting marked in red to run the layer.' : 'Running the layer…'}</p></div>`}`
          }
        </main>
      </div>
    `;
  }

  private renderBanners(stale: boolean) {
    const isolated = globalThis.crossOriginIsolated === true;
    return html`
      ${this.gpu === 'ok' ? nothing : html`<p class="banner warn" data-banner="no-webgpu">${this.gpu === 'none' ? 'This browser exposes no WebGPU' : 'WebGPU is present but no adapter was found'}, so nothing runs here: the plan, shapes and a timeline modeled from the cost model are shown instead. ${enableWebGpuHint}</p>`}
      ${isolated || this.gpu !== 'ok' ? nothing : html`<p class="banner info" data-banner="message-port">This page is not cross-origin isolated, so the ranks exchange data over the MessagePort transport (the shared-memory ring needs the headers Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp).</p>`}
      ${this.unknownKeys.map((m) => html`<p class="banner warn" data-banner="hash">Link: ${m}</p>`)}
      ${this.runError ? html`<p class="banner error" role="alert" data-banner="run-error">The run failed: ${this.runError}${this.result ? ' The last good run is still shown.' : ''}</p>` : nothing}
      ${stale && this.result && !this.runError && this.issues.length ? html`<p class="banner error" data-banner="stale">These settings cannot run (see the message in red beside the control); the last good run (t = ${this.result.config.tp}) is still shown.</p>` : nothing}
    `;
  }

  private renderRun(r: PlaygroundResult, s: Settings, stale: boolean) {
    const tl = r.timeline;
    const exposed = tl.totals.reduce((m, x) => Math.max(m, x.exposedMs), 0);
    const transport = r.transport ?? (this.gpu === 'ok' ? chooseTransport() : undefined);
    const link = `${location.origin}${location.pathname}${hashFromSettings(s)}`;
    const sources = `Machine: ${this.shownMachine} · compute: ${r.computeSource}. Communication: ${r.commSource}.`;
    return html`
      <section class="card top ${stale ? 'stale' : ''}">
        <div class="totals">
          <div>
            t = <strong data-shown-tp>${r.config.tp}</strong>${r.config.sp ? ' with SP' : ''} · step
            <strong>${formatMs(tl.stepMs)}</strong> (slowest: rank ${tl.slowestRank}) · exposed communication, worst
            rank:
            <strong data-exposed-ms=${exposed}>${formatMs(exposed)}</strong
            >${tl.overlap ? ' (dgrad all-reduce overlapped with wgrad)' : ''}
          </div>
          <div class="note" data-source="transport">
            ${transport ? `Ranks exchange data over ${transportWords[transport] ?? transport}` : 'No transport: nothing runs without WebGPU'}${r.adapter ? `; GPU: ${r.adapter}` : ''}.
          </div>
        </div>
        <tp-oracle-badge
          .oracle=${r.oracle}
          .cpuOracle=${r.cpuOracle}
          cpuSkipped=${r.cpuSkipped ?? ''}
          .tp=${r.config.tp}
          reason="no WebGPU here: the layer did not run"
        ></tp-oracle-badge>
      </section>
      <section class="card ${stale ? 'stale' : ''}" data-sources>
        ${
          s.view === 'timeline'
            ? html`<tp-timeline .timeline=${tl} .phase=${s.pass} caption=${sources}></tp-timeline>`
            : s.view === 'classroom'
              ? html`<tp-classroom
                  .tp=${s.tp}
                  .step=${s.step - 1}
                  .pools=${this.runner}
                  @step-change=${(e: CustomEvent<{ step: number }>) =>
                    (location.hash = hashFromSettings({ ...this.settings, step: e.detail.step + 1 }))}
                ></tp-classroom>`
              : html`<tp-gemm-view
                  .config=${configOf(s)}
                  .net=${s.net}
                  .system=${s.system}
                  .dtype=${s.dtype}
                  .overlap=${s.overlap}
                  .pools=${this.runner}
                ></tp-gemm-view>`
        }
      </section>
      <section class="card ${stale ? 'stale' : ''}">
        <tp-cluster-panel
          .config=${{ ...configOf(s), ...clusterSizes(s.cmodel, s) }}
          .settings=${s}
          @settings-change=${this.onChange}
          .system=${s.system}
          .dtype=${s.dtype}
          .layers=${s.layers}
          .gpus=${s.gpus}
          .gbatch=${s.gbatch}
          .overlap=${s.overlap}
        ></tp-cluster-panel>
      </section>
      <section class="card">
        <tp-advisor-panel .settings=${s} @settings-change=${this.onChange}></tp-advisor-panel>
      </section>
      <div class="panels ${stale ? 'stale' : ''}">
        <section class="card"><tp-shapes .plan=${r.plan} .accounting=${r.accounting}></tp-shapes></section>
        <section class="card">
          <tp-exports
            .timeline=${tl}
            .config=${r.config}
            .output=${r.output}
            preset=${s.preset}
            link=${link}
            system=${s.system}
            .dtype=${s.dtype}
            .layers=${s.layers}
            .gpus=${s.gpus}
            .gbatch=${s.gbatch}
          ></tp-exports>
        </section>
      </div>
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-app': TpApp;
  }
}
