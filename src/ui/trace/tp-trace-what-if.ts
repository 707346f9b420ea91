// <tp-trace-what-if>: the job's own rates from its traces, and another layout of the same model
// projected on them beside the catalog's projection (docs/what-if.md).
import { LitElement, html, nothing, type PropertyValues } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import { whatIfFromTrace, type Layout, type WhatIf, type WhatIfRow } from '../../calibrate/trace-what-if.ts';
import { changedSetup, layoutLabel, setupLayout, type LayoutChange } from '../../calibrate/what-if-layout.ts';
import { formatMs } from '../../core/format.ts';
import type { SystemSpec } from '../../hardware/systems.ts';
import type { MeasuredTrace } from '../../kineto/kineto-types.ts';
import { jobManifestFile, manifestProjection, type JobManifest } from '../../megatron/job-manifest.ts';
import { recomputeChoices, type RecomputeChoice } from '../../megatron/parallel-layout.ts';
import { panelStyles } from '../shared/page-style.ts';
import { measuredAgainstHead, traceBarStyles } from './trace-panel-parts.ts';
import { commandKernelOptions } from '../../projection/layer/command-machine.ts';

/** The degrees the selects offer (the job's own is added when it is not among them). */
const degrees = [1, 2, 4, 8, 16, 32, 64] as const;
type DegreeKey = 'tp' | 'pp' | 'vpp' | 'cp' | 'microBatch' | 'gpus';
const degreeLabels: Record<DegreeKey, string> = {
  tp: 't',
  pp: 'p',
  vpp: 'v',
  cp: 'cp',
  microBatch: 'micro-batch',
  gpus: 'GPUs',
};

/**
 * `<tp-trace-what-if>`: with a job's manifest and its traces, the rates the traces measured
 * (`[data-table="rates"]`: rows `tr[data-class]` with `data-scale`, `tr[data-link]` with
 * `data-alpha-us`, `data-bus-gbps`), selects for another layout (`select[data-key="tp|pp|vpp|cp|
 * microBatch|gpus|recompute"]`), and after "Re-project" (`[data-what-if]`) the table
 * `[data-table="what-if"]`: rows `tr[data-layout="job|other"]` with `data-nominal-ms` and
 * `data-reprojected-ms`. A layout Megatron refuses is named in `[data-what-if-error]`.
 */
@customElement('tp-trace-what-if')
export class TpTraceWhatIf extends LitElement {
  static override styles = [panelStyles, traceBarStyles];

  @property({ attribute: false }) trace: MeasuredTrace | undefined;
  @property({ attribute: false }) job: JobManifest | undefined;
  /** A calibrated system file dropped with the traces: the rates go on it in place of the manifest's. */
  @property({ attribute: false }) calibrated: SystemSpec | undefined;

  @state() private change: LayoutChange = {};
  @state() private result: WhatIf | undefined;
  @state() private error = '';
  @state() private busy = false;

  protected override willUpdate(changed: PropertyValues<this>): void {
    if ((changed.has('job') || changed.has('trace') || changed.has('calibrated')) && this.job && this.trace) {
      this.change = {};
      void this.reproject();
    }
  }

  private jobLayout(): { layout: Layout; system: SystemSpec } {
    const p = manifestProjection(this.job!);
    return {
      layout: {
        label: 'the job',
        setup: p.parsed.setup,
        dtype: p.parsed.dtype,
        kernels: commandKernelOptions(p.parsed.flags),
      },
      system: this.calibrated ?? p.system,
    };
  }

  private async reproject(): Promise<void> {
    if (!this.job || !this.trace) return;
    this.error = '';
    this.busy = true;
    try {
      const { layout, system } = this.jobLayout();
      const others: Layout[] = [];
      if (Object.keys(this.change).length) {
        const setup = changedSetup(layout.setup, this.change);
        others.push({ label: 'the other layout', setup, dtype: layout.dtype, kernels: layout.kernels });
      }
      this.result = await whatIfFromTrace(this.trace, layout, system, others);
    } catch (e) {
      this.error = e instanceof Error ? e.message : String(e);
    } finally {
      this.busy = false;
    }
  }

  private set(key: DegreeKey | 'recompute', value: string): void {
    this.change = { ...this.change, [key]: key === 'recompute' ? (value as RecomputeChoice) : Number(value) };
  }

  private renderControls() {
    const setup = this.jobLayout().layout.setup;
    const l = { ...setupLayout(setup), gpus: setup.gpus, ...this.change };
    const select = (key: DegreeKey) => {
      const v = l[key];
      const options = [...new Set([...degrees, v])].sort((a, b) => a - b);
      return html`<label
        >${degreeLabels[key]}
        <select data-key=${key} @change=${(e: Event) => this.set(key, (e.target as HTMLSelectElement).value)}>
          ${options.map((o) => html`<option value=${o} ?selected=${o === v}>${o}</option>`)}
        </select></label
      >`;
    };
    return html`<div class="bar">
      ${(['tp', 'pp', 'vpp', 'cp', 'microBatch', 'gpus'] as const).map(select)}
      <label
        >recompute
        <select data-key="recompute" @change=${(e: Event) => this.set('recompute', (e.target as HTMLSelectElement).value)}>
          ${recomputeChoices.map((o) => html`<option value=${o} ?selected=${o === l.recompute}>${o}</option>`)}
        </select></label
      >
      <button type="button" data-what-if ?disabled=${this.busy} @click=${this.reproject}>Re-project</button>
    </div>`;
  }

  private renderRates(w: WhatIf) {
    const r = w.rates;
    return html`
      <p class="note">
        Rates of ${r.step === undefined ? 'the whole trace' : `ProfilerStep#${r.step}`}, rank ${r.rank} (the busiest
        in compute), step ${formatMs(r.measuredStepMs)}.
      </p>
      <table data-table="rates">
        ${measuredAgainstHead('model')}
        <tbody>
          ${r.classes.map(
            (c) =>
              html`<tr data-class=${c.cls} data-scale=${c.scale}>
                <td>${c.cls} kernels, Σ per step</td>
                <td class="num">${formatMs(c.measuredMs)}</td>
                <td class="num">${formatMs(c.modelMs)}</td>
                <td class="num">${c.scale.toFixed(3)}×</td>
              </tr>`,
          )}
          ${r.links.map(
            (k) =>
              html`<tr data-link=${k.scope} data-alpha-us=${k.alphaUs} data-bus-gbps=${k.busGBps}>
                <td>
                  ${k.scope === 'intra' ? 'node link' : `network, ${k.ranksPerNode} ranks per node`}: ${k.how} fitted to
                  ${k.calls} calls (${k.what})
                </td>
                <td class="num" colspan="3">
                  α ${k.alphaUs.toFixed(2)} µs, B ${k.busGBps.toFixed(1)} GB/s${k.scope === 'inter' ? ' per NIC' : ''}
                </td>
              </tr>`,
          )}
        </tbody>
      </table>
      ${r.notes.length ? html`<ul class="notes">${r.notes.map((n) => html`<li>${n}</li>`)}</ul>` : nothing}
    `;
  }

  private renderRow(x: WhatIfRow, which: 'job' | 'other', jobMs: number) {
    if (!x.ok)
      return html`<tr data-layout=${which}>
        <td>${x.layout.label}</td>
        <td colspan="4">${x.reason}</td>
      </tr>`;
    return html`<tr
      data-layout=${which}
      data-nominal-ms=${x.nominal.stepMs}
      data-reprojected-ms=${x.reprojected.stepMs}
    >
      <td>${x.layout.label}: ${layoutLabel(x.layout.setup)}</td>
      <td class="num">${formatMs(x.nominal.stepMs)}</td>
      <td class="num">${formatMs(x.reprojected.stepMs)}</td>
      <td class="num">${Math.round(x.reprojected.tokensPerS).toLocaleString('en')}</td>
      <td class="num">${(x.reprojected.stepMs / jobMs).toFixed(2)}×</td>
    </tr>`;
  }

  protected override render() {
    if (!this.trace) return nothing;
    if (!this.job)
      return html`<h3>What-if from this trace</h3>
        <p class="note">Drop the job's ${jobManifestFile} with its traces to re-project other layouts on its rates.</p>`;
    const w = this.result;
    const jobMs = w?.job.ok ? w.job.reprojected.stepMs : Number.NaN;
    return html`
      <h3>What-if from this trace: another layout on the job's own rates</h3>
      ${this.renderControls()}
      ${this.error ? html`<p class="error" role="alert" data-what-if-error>${this.error}</p>` : nothing}
      ${
        w
          ? html`${this.renderRates(w)}
              <table data-table="what-if">
                <thead>
                  <tr>
                    <th>layout</th>
                    <th class="num">catalog step</th>
                    <th class="num">step from the trace</th>
                    <th class="num">tokens/s</th>
                    <th class="num">step vs the job</th>
                  </tr>
                </thead>
                <tbody>
                  ${this.renderRow(w.job, 'job', jobMs)} ${w.rows.map((x) => this.renderRow(x, 'other', jobMs))}
                </tbody>
              </table>
              <p class="note">
                Each GEMM is priced by the tile model's FLOPs and shape at the rate the job's GEMMs ran, memory-bound
                kernels by bytes at the job's, FlashAttention likewise; collectives by the α and B the job's own calls
                fit (docs/what-if.md).
              </p>`
          : nothing
      }
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-trace-what-if': TpTraceWhatIf;
  }
}
