// <tp-trace-projection>: the projected step of the configuration a measured job ran, beside the measured one.
import { LitElement, css, html, nothing, type PropertyValues } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import { jobManifestFile, manifestProjection, type JobManifest } from '../../megatron/job-manifest.ts';
import { parseMegatronCommand, type ParsedCommand } from '../../megatron/megatron-command.ts';
import { systemFor } from '../../hardware/device-system.ts';
import { parseSystem, systemNames, systems, type SystemName, type SystemSpec } from '../../hardware/systems.ts';
import { projectStep, type StepProjection } from '../../projection/step/cluster-projection.ts';
import type { MeasuredAnalysis } from '../../kineto/measured-analysis.ts';
import { inGroupDim } from '../../kineto/process-group.ts';
import { compareWithProjection, type ComparedRow } from '../../projection/studies/measured-vs-projected.ts';
import { ncclName } from '../shared/measured-format.ts';
import { panelStyles } from '../shared/page-style.ts';
import { measuredAgainstHead, traceBarStyles } from './trace-panel-parts.ts';
import { formatMs } from '../../core/format.ts';
import { calibratedSystemFile } from '../../calibrate/system-file.ts';
import { layerArchText } from '../../megatron/layer-arch.ts';
import { commandMachine } from '../../projection/layer/command-machine.ts';

/** The system picker's value for a dropped calibrated system file. */
const calibratedChoice = 'calibrated';

const rowNames: Record<ComparedRow['what'], string> = {
  step: 'step time',
  compute: 'compute (worst rank)',
  comm: 'communication (worst rank)',
  exposed: 'exposed communication (worst rank)',
};

/**
 * `<tp-trace-projection>`: a textarea for the job's Megatron-LM command (`[data-command]`), a system
 * picker, and after "Project" a table `[data-table="compare"]` of measured vs projected (rows
 * `tr[data-what]` with `data-measured-ms`, `data-projected-ms`) and per collective. Bad input is
 * named in `[data-projection-error]`.
 */
@customElement('tp-trace-projection')
export class TpTraceProjection extends LitElement {
  static override styles = [
    panelStyles,
    traceBarStyles,
    css`
      textarea {
        width: 100%;
        min-height: 5em;
        font-family: ui-monospace, monospace;
        font-size: 13px;
      }
    `,
  ];

  @property({ attribute: false }) analysis: MeasuredAnalysis | undefined;
  /** The measured window: a ProfilerStep number, or 'all'. */
  @property({ attribute: false }) step: number | 'all' = 'all';
  /** GPUs of the job when the command does not say (torchrun's --nproc-per-node × --nnodes). */
  @property({ type: Number }) gpus = 1;
  @property({ attribute: false }) deviceNames: readonly string[] = [];
  /** A job bundle's manifest: its command and system are used without pasting, and projected at once. */
  @property({ attribute: false }) job: JobManifest | undefined;
  /** A calibrated system file dropped with the traces (docs/calibrate.md): chosen, and projected on at once. */
  @property({ attribute: false }) calibrated: SystemSpec | undefined;

  @state() private command = '';
  /** The picked system: a catalog name, or the calibrated file's. */
  @state() private system: SystemName | typeof calibratedChoice | undefined;
  @state() private error = '';
  @state() private busy = false;
  @state() private result: { parsed: ParsedCommand; projection: StepProjection } | undefined;

  protected override willUpdate(changed: PropertyValues<this>): void {
    const job = changed.has('job') && this.job;
    if (job) {
      this.command = job.command;
      this.system = (systemNames as readonly string[]).includes(job.system) ? (job.system as SystemName) : undefined;
    }
    const calibrated = changed.has('calibrated') && this.calibrated;
    if (calibrated) this.system = calibratedChoice;
    if (job || (calibrated && this.command.trim())) void this.project();
  }

  private async project(): Promise<void> {
    this.error = '';
    this.busy = true;
    try {
      // The manifest's own command and system (custom systems too) while the text is untouched.
      const fromJob = this.job && this.command === this.job.command ? manifestProjection(this.job) : undefined;
      const parsed = fromJob?.parsed ?? parseMegatronCommand(this.command, this.gpus);
      const system: SystemSpec =
        this.system === calibratedChoice && this.calibrated
          ? this.calibrated
          : fromJob && this.system === undefined
            ? fromJob.system
            : parseSystem(
                this.system === calibratedChoice || this.system === undefined
                  ? systemFor(this.deviceNames)
                  : this.system,
              );
      this.result = { parsed, projection: await projectStep(parsed.setup, commandMachine(parsed, system)) };
    } catch (e) {
      this.error = e instanceof Error ? e.message : String(e);
    } finally {
      this.busy = false;
    }
  }

  private renderComparison() {
    const r = this.result;
    if (!r || !this.analysis) return nothing;
    const c = compareWithProjection(this.analysis, this.step === 'all' ? undefined : this.step, r.projection);
    const p = r.projection;
    const ratio = (m: number, q: number) => (q > 0 ? `${(m / q).toFixed(2)}×` : '—');
    return html`
      <p class="note" data-job=${this.job?.name ?? ''}>
        ${this.job && this.command === this.job.command ? `Job ${this.job.name} from its ${jobManifestFile} (Megatron-LM ${this.job.megatron.tag}). ` : ''}Projected: ${p.machine.system.label}, ${p.machine.dtype}, ${layerArchText(r.parsed.flags.layerArch)}; t = ${p.setup.tp}${p.setup.sp ? ' with SP' : ''},
        ${p.setup.layers} layers, DP = ${p.dp}, ${p.microBatches} micro-batch${p.microBatches > 1 ? 'es' : ''} per step.
        Measured: ${c.step === undefined ? 'the whole trace' : `ProfilerStep#${c.step}`}.
        ${r.parsed.defaulted.length ? `Defaults used: ${r.parsed.defaulted.join('; ')}.` : ''}
      </p>
      <table data-table="compare">
        ${measuredAgainstHead('projected')}
        <tbody>
          ${c.rows.map(
            (x) =>
              html`<tr data-what=${x.what} data-measured-ms=${x.measuredMs} data-projected-ms=${x.projectedMs}>
                <td>${rowNames[x.what]}</td>
                <td class="num">${formatMs(x.measuredMs)}</td>
                <td class="num">${formatMs(x.projectedMs)}</td>
                <td class="num">${ratio(x.measuredMs, x.projectedMs)}</td>
              </tr>`,
          )}
          ${c.collectives.map(
            (x) =>
              html`<tr
                data-collective=${x.collective}
                data-dim=${x.dim ?? ''}
                data-measured-ms=${x.measuredMs}
                data-projected-ms=${x.projectedMs}
              >
                <td>Σ ${ncclName(x.collective)}${inGroupDim(x.dim)} per GPU</td>
                <td class="num">${formatMs(x.measuredMs)}</td>
                <td class="num">${formatMs(x.projectedMs)}</td>
                <td class="num">${ratio(x.measuredMs, x.projectedMs)}</td>
              </tr>`,
          )}
        </tbody>
      </table>
      <p class="note">
        A profiled window may cover part of a step or several; an NCCL kernel's measured time includes waiting for its
        slowest peer, the projection's does not. Collectives are told apart by the process group Megatron-Core names
        in the trace; projected, the TP group's all-reduce includes the finalize all-reduces, and the DP group's
        gradient sync is the part past the pipeline's end (what the step waits for).
      </p>
    `;
  }

  protected override render() {
    const chosen = this.system ?? systemFor(this.deviceNames);
    return html`
      <h3>Projected step of the configuration the job ran</h3>
      <label
        >Paste the job's Megatron-LM command (the Exports panel's command, or your own launch):
        <textarea
          data-command
          .value=${this.command}
          @input=${(e: Event) => (this.command = (e.target as HTMLTextAreaElement).value)}
          placeholder="torchrun --nproc-per-node 8 pretrain_gpt.py --tensor-model-parallel-size 8 --num-layers 32 --hidden-size 4096 …"
        ></textarea>
      </label>
      <div class="bar">
        <label
          >System
          <select
            data-system
            @change=${(e: Event) =>
              (this.system = (e.target as HTMLSelectElement).value as SystemName | typeof calibratedChoice)}
          >
            ${systemNames.map((n) => html`<option value=${n} ?selected=${n === chosen}>${systems[n].label}</option>`)}
            ${
              this.calibrated
                ? html`<option value=${calibratedChoice} ?selected=${chosen === calibratedChoice}>
                    ${this.calibrated.label} (${calibratedSystemFile})
                  </option>`
                : nothing
            }
          </select></label
        >
        <button type="button" data-project ?disabled=${this.busy || !this.command.trim()} @click=${this.project}>
          Project
        </button>
      </div>
      ${this.error ? html`<p class="error" role="alert" data-projection-error>${this.error}</p>` : nothing}
      ${this.renderComparison()}
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-trace-projection': TpTraceProjection;
  }
}
