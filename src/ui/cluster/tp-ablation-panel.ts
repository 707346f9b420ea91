// <tp-ablation-panel>: the overlap ablation (seed 004 M102, docs/sources.md) of the page's layout on
// the cluster, in a worker.
import * as Comlink from 'comlink';
import { LitElement, css, html, nothing } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import { budgetDegrees, resolveGlobalBatch } from '../../megatron/global-batch.ts';
import type { TrainingSetup } from '../../megatron/training-setup.ts';
import type { AblationRow } from '../../projection/studies/overlap-ablation.ts';
import { combinationLabel, overlapFlagInfo } from '../../projection/layer/overlap-flags.ts';
import { describeSharing } from '../../projection/links/shared-link-label.ts';
import { panelStyles } from '../shared/page-style.ts';
import { systemOf } from '../settings/system-files.ts';
import { formatBytes, formatMs, formatSignedMs } from '../../core/format.ts';
import { clusterModelName } from '../settings/cluster-model-choice.ts';
import { clusterModelLayers, clusterModelOf, clusterModelSetup } from '../settings/cluster-model.ts';
import { settingsTable, type Settings } from '../settings/state.ts';
import type { AblationAnswer, AblationWorker } from './ablation.worker.ts';
import { LatestWins } from '../../session/latest-wins.ts';
import { inFreshWorker } from './fresh-worker.ts';

/**
 * `<tp-ablation-panel>`: every overlap the projection prices (async dgrad all-reduce, SP
 * re-gather, --tp-comm-overlap, --overlap-grad-reduce, --overlap-param-gather, p2p overlap) alone,
 * in pairs and all on, for the cluster panel's model at the page's t and SP with the pipeline and
 * distributed optimizer chosen here: step, exposed communication per group, the memory the
 * overlaps hold, and each combination slower than its best subset flagged — the same ablation as
 * `npm run project -- --ablate`, computed in a Web Worker.
 */
@customElement('tp-ablation-panel')
export class TpAblationPanel extends LitElement {
  static override styles = [
    panelStyles,
    css`
      td:not([colspan]):not(.flags) {
        white-space: nowrap;
      }
      tr.worse td {
        background: #fde8e8;
      }
      td.flags {
        font-family: ui-monospace, monospace;
        font-size: 12px;
      }
      label {
        margin-right: 12px;
      }
    `,
  ];

  @property({ attribute: false }) settings: Settings | undefined;
  @state() private pp = 1;
  @state() private vpp = 1;
  @state() private distributedOptimizer = true;
  @state() private running = false;
  @state() private answer: AblationAnswer | undefined;
  @state() private error = '';
  /** The running ablation: a new run terminates its worker. */
  private readonly runs = new LatestWins();

  override disconnectedCallback(): void {
    this.runs.drop();
    super.disconnectedCallback();
  }

  /** The setup the ablation varies: the page's model, t and SP on its system, with this panel's p, v and optimizer. */
  private setup(s: Settings): TrainingSetup {
    const model = clusterModelOf(s);
    const sizes = model.sizes;
    return {
      ...clusterModelSetup(model),
      tp: s.tp,
      sp: s.sp,
      gpus: s.gpus,
      globalBatch: resolveGlobalBatch(s.gbatch, sizes.b, s.gpus, budgetDegrees(s.gpus)),
      overlap: true,
      pp: this.pp,
      vpp: this.vpp,
      distributedOptimizer: this.distributedOptimizer,
    };
  }

  /** Runs the ablation in a fresh worker (a running one is abandoned). */
  async run(): Promise<void> {
    const s = this.settings;
    if (!s) return;
    this.runs.drop();
    this.error = '';
    this.answer = undefined;
    let setup: TrainingSetup;
    try {
      setup = this.setup(s);
    } catch (e) {
      this.error = e instanceof Error ? e.message : String(e);
      return;
    }
    this.running = true;
    await this.runs.run({
      work: (req) =>
        inFreshWorker(
          req,
          () => new Worker(new URL('./ablation.worker.ts', import.meta.url), { type: 'module', name: 'ablation' }),
          (worker) =>
            Comlink.wrap<AblationWorker>(worker).ablate({ setup, system: systemOf(s.system), dtype: s.dtype }),
        ),
      done: (answer) => (this.answer = answer),
      failed: (e) => (this.error = e instanceof Error ? e.message : String(e)),
      settled: () => (this.running = false),
    });
  }

  private row(r: AblationRow, all: number) {
    const label = r.flags.length === all && all > 2 ? `all ${all} on` : combinationLabel(r.flags);
    const key = r.flags.join('+') || 'none';
    if (!r.result.ok)
      return html`<tr data-combination=${key} data-launched="false">
        <td class="flags">${label}</td>
        <td colspan="10">not launched: ${r.result.reason}</td>
      </tr>`;
    const x = r.result;
    const e = x.exposedByGroup;
    return html`<tr
      data-combination=${key}
      data-step-ms=${x.stepMs}
      data-worse=${String(x.worseThanBestSubset)}
      class=${x.worseThanBestSubset ? 'worse' : ''}
    >
      <td class="flags">${label}</td>
      <td>${formatMs(x.stepMs)}</td>
      <td>${r.flags.length ? formatSignedMs(x.vsBaselineMs) : '—'}</td>
      <td data-exposed-tp>${formatMs(e.tp)}</td>
      <td>${formatMs(e.cp)}</td>
      <td>${formatMs(e.dp)}</td>
      <td>${formatMs(e.pp)}</td>
      <td data-in-flight=${x.inFlightBytes}>${formatBytes(x.inFlightBytes)}</td>
      <td>${formatBytes(x.peakBytes)}${x.oom ? ' OOM' : ''}</td>
      <td>${x.interactionMs !== undefined ? formatSignedMs(x.interactionMs) : ''}</td>
      <td
        data-shared-link=${x.sharedLinkCause?.map((c) => c.link).join('; ') ?? ''}
        title=${x.linkSharing.map((c) => describeSharing(c, formatMs)).join('\n')}
      >
        ${
          x.worseThanBestSubset && x.bestSubset
            ? `worse than ${combinationLabel(x.bestSubset.flags)}${x.sharedLinkCause ? ` (shared link: ${[...new Set(x.sharedLinkCause.map((c) => c.link))].join('; ')})` : ''}`
            : ''
        }
      </td>
    </tr>`;
  }

  private table(a: AblationAnswer) {
    const n = a.applicable.length;
    return html`<ul data-ablation-flags>
        ${a.applicable.map(
          (f) =>
            html`<li data-flag=${f}><b>${overlapFlagInfo[f].short}</b> ${overlapFlagInfo[f].megatron}: ${overlapFlagInfo[f].hides}</li>`,
        )}
        ${a.notApplicable.map(
          (x) =>
            html`<li data-flag=${x.flag} data-not-applicable>
              <b>${overlapFlagInfo[x.flag].short}</b> not applicable: ${x.reason}
            </li>`,
        )}
      </ul>
      <table data-ablation-table>
        <thead>
          <tr>
            <th>overlaps on</th>
            <th>step</th>
            <th>vs none</th>
            <th>exposed TP</th>
            <th>CP</th>
            <th>DP</th>
            <th>PP</th>
            <th>in flight</th>
            <th>peak memory</th>
            <th>pair interaction</th>
            <th></th>
          </tr>
        </thead>
        <tbody>
          ${a.rows.map((r) => this.row(r, n))}
        </tbody>
      </table>
      <p class="note" data-ablation-summary>
        Fastest of all ${2 ** n} subsets: ${combinationLabel(a.best.flags)} at ${formatMs(a.best.stepMs)};
        ${a.flagged} combination${a.flagged === 1 ? '' : 's'} slower than a subset of ${a.flagged === 1 ? 'itself' : 'themselves'}
        (computed in ${formatMs(a.ms)} in a worker).
      </p>`;
  }

  protected override render() {
    const s = this.settings;
    if (!s) return nothing;
    const a = this.answer;
    // p and v parse with the settings table's rows (whole, ≥ 1, p ≤ ppCap): a bad value keeps the last good one and says why.
    const degree = (field: 'pp' | 'vpp') => (e: Event) => {
      try {
        this[field] = settingsTable[field].parse((e.target as HTMLInputElement).value);
        this.error = '';
      } catch (err) {
        this.error = err instanceof Error ? err.message : String(err);
      }
    };
    return html`<h2>Overlap ablation</h2>
      <p class="note">
        Every overlap the projection prices, alone, in pairs and all on, for ${clusterModelName(s.cmodel)} ×
        ${clusterModelLayers(s)} layers on ${s.gpus} GPUs at the page's t = ${s.tp}${s.sp ? ' with SP' : ''}: what each hides
        (exposed communication per group), what it costs (SMs and HBM taken from the compute beside it, the memory it
        holds), and which combinations are slower than one of their subsets (seed 004 M102; the same as
        <code>npm run project -- --ablate</code>, docs/overlap-ablation.md).
      </p>
      <label>p <input type="number" min="1" data-ablation-pp .value=${String(this.pp)} @change=${degree('pp')} /></label>
      <label>v <input type="number" min="1" data-ablation-vpp .value=${String(this.vpp)} @change=${degree('vpp')} /></label>
      <label
        ><input
          type="checkbox"
          data-ablation-distopt
          .checked=${this.distributedOptimizer}
          @change=${(e: Event) => (this.distributedOptimizer = (e.target as HTMLInputElement).checked)}
        />
        distributed optimizer</label
      >
      <button type="button" data-ablation-run ?disabled=${this.running} @click=${() => void this.run()}>
        ${this.running ? 'projecting…' : 'ablate overlaps'}
      </button>
      ${this.error ? html`<p class="error" role="alert" data-ablation-error>${this.error}</p>` : nothing}
      ${a ? this.table(a) : nothing}`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-ablation-panel': TpAblationPanel;
  }
}
