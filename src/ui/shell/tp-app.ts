// <tp-app>: the page shell. The URL hash is the state; a change re-runs the layer; the last good view stays on errors.
import { LitElement, html, nothing } from 'lit';
import { customElement, state } from 'lit/decorators.js';
import { panelStyles } from '../shared/page-style.ts';
import { appStyles } from './app-style.ts';
import type { FieldIssue } from '../settings/field-issues.ts';
import { PageRuns, type PageRunState } from './page-runs.ts';
import { loadLaterElements } from './later-elements.ts';
import { renderBanners, renderRun, renderWorkerView } from './run-view.ts';
import type { SettingsChangeDetail } from '../settings/settings-change.ts';
import {
  hasControl,
  hashFromSettings,
  mainViews,
  runKey,
  settingsFromHash,
  type MainView,
  type Settings,
} from '../settings/state.ts';
import './tp-machine-controls.ts';
import './tp-controls.ts';
import './tp-mesh-controls.ts';
import { meshIssues, runsMesh } from '../settings/mesh-settings.ts';
import { clusterIssues } from '../settings/cluster-flags.ts';
import { clusterModelIssues } from '../settings/cluster-model.ts';
import { MeshRuns, type MeshRunState } from './mesh-runs.ts';
import { renderMesh } from './mesh-view.ts';
import { renderMeshClassroom } from './mesh-classroom-card.ts';
import { MoeRuns, type MoeRunState } from './moe-runs.ts';
import { renderMoeCard, renderMoeClassroom, renderMoeTimeline } from './moe-cards.ts';
import { moeOn } from '../settings/moe-settings.ts';

const viewNames: Record<MainView, string> = {
  timeline: 'Timeline',
  classroom: 'Classroom',
  gemm: 'GEMM efficiency',
  trace: 'Measured trace',
};

/**
 * `<tp-app>`: reads the settings from `location.hash` (and writes them back on every control
 * change, so each view is a link) and hands them to PageRuns, which checks them once, draws what
 * the plan gives at once and lets the rank workers fill in. An invalid setting or a failed run
 * leaves the last good view on screen with the message next to its control. `data-busy` and
 * `data-shown` (the hash of the last run the workers finished) on the host are for scripts and tests.
 */
@customElement('tp-app')
export class TpApp extends LitElement {
  static override styles = [panelStyles, appStyles];

  @state() private settings: Settings = settingsFromHash(location.hash).settings;
  @state() private hashIssues: readonly FieldIssue[] = [];
  /** Messages about hash keys with no control to show them beside (unknown keys, placement, step): a banner names them. */
  @state() private unknownKeys: readonly string[] = [];
  @state() private run: PageRunState;
  @state() private mesh: MeshRunState;
  @state() private moe: MoeRunState;
  private changed: keyof Settings | undefined;
  private readonly runs: PageRuns;
  private readonly meshRuns: MeshRuns;
  private readonly moeRuns: MoeRuns;
  private readonly onHash = (): void => this.apply();

  constructor() {
    super();
    this.runs = new PageRuns((s) => (this.run = s));
    this.run = this.runs.current;
    this.meshRuns = new MeshRuns(
      (s) => (this.mesh = s),
      this.run.gpu === 'ok',
      () => this.runs.idle(),
    );
    this.mesh = this.meshRuns.current;
    this.moeRuns = new MoeRuns((s) => (this.moe = s), this.run.gpu === 'ok');
    this.moe = this.moeRuns.current;
  }

  override connectedCallback(): void {
    super.connectedCallback();
    window.addEventListener('hashchange', this.onHash);
    this.apply();
  }

  override disconnectedCallback(): void {
    window.removeEventListener('hashchange', this.onHash);
    void this.runs.dispose();
    void this.meshRuns.dispose();
    super.disconnectedCallback();
  }

  /** Reads the hash and asks for a run of it (the measured-trace view runs nothing). */
  private apply(): void {
    const { settings, messages } = settingsFromHash(location.hash);
    this.settings = settings;
    // A message sits under its field's control; one about a key without a control (unknown, or set
    // only by a link or a view's own buttons: placement, step) goes to the link banner.
    this.hashIssues = messages.flatMap((m) => (hasControl(m.key) ? [{ field: m.key, message: m.message }] : []));
    this.unknownKeys = messages.flatMap((m) => (hasControl(m.key) ? [] : [m.message]));
    if (settings.view !== 'trace') this.runs.request(settings, this.changed);
    if (settings.view === 'timeline' || settings.view === 'classroom') {
      this.meshRuns.request(settings);
      this.moeRuns.request(settings);
    }
    void loadLaterElements(settings.view);
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
    this.dataset.busy = String(this.run.busy);
    this.dataset.shown = this.run.shownHash;
  }

  protected override render() {
    const s = this.settings;
    const run = this.run;
    const r = run.result;
    const stale = run.issues.length > 0 || !!run.runError || (r !== undefined && runKey(s) !== run.shownKey);
    const issues = [
      ...this.hashIssues,
      ...run.issues,
      ...meshIssues(s, this.changed),
      ...clusterIssues(s, this.changed),
      ...clusterModelIssues(s, this.changed),
    ];
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
        <div class="status" role="status" aria-live="polite" data-busy=${String(run.busy)} data-status>
          ${s.view === 'trace' ? 'no layer run in this view' : run.progress || 'starting…'}
        </div>
      </header>
      <div class="layout">
        <aside>
          <tp-controls
            .settings=${s}
            .issues=${issues}
            .notes=${run.notes}
            @settings-change=${this.onChange}
          ></tp-controls>
          <tp-mesh-controls .settings=${s} .issues=${issues} @settings-change=${this.onChange}></tp-mesh-controls>
          <tp-machine-controls .settings=${s} .issues=${issues} @settings-change=${this.onChange}></tp-machine-controls>
        </aside>
        <main>
          ${
            s.view === 'trace'
              ? html`<tp-trace-view class="card"></tp-trace-view>`
              : html`${renderBanners(run, this.unknownKeys, stale)}
                ${s.view === 'timeline' && runsMesh(s) ? renderMesh(this.mesh, s, run.gpu === 'ok') : nothing}
                ${s.view === 'classroom' && runsMesh(s) ? renderMeshClassroom(this.mesh, s, run.gpu === 'ok') : nothing}
                ${s.view === 'classroom' && moeOn(s) ? renderMoeClassroom(this.moe, s, run.gpu === 'ok') : nothing}
                ${
                  r
                    ? renderRun(r, s, run, this.runs.runner, stale, this.onChange, this.moe)
                    : s.view === 'timeline' && moeOn(s) && !run.issues.length
                      ? html`<section class="card">${renderMoeTimeline(this.moe, s)}</section>${renderMoeCard(this.moe, s)}`
                      : html`<div class="card"><p class="note">${run.issues.length ? 'Fix the setting marked in red to run the layer.' : s.view === 'timeline' ? 'Planning the layer…' : 'The layer runs on the rank workers when the timeline is shown.'}</p></div>
                      ${s.view === 'timeline' || run.issues.length ? nothing : html`<section class="card">${renderWorkerView(s, this.runs.runner)}</section>`}`
                }`
          }
        </main>
      </div>
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-app': TpApp;
  }
}
