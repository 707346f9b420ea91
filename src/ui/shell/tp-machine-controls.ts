// <tp-machine-controls>: which machine the timeline describes (a real cluster, this browser, or the custom mix), its system, dtype, layers, GPUs and global batch.
import { html, nothing, type TemplateResult } from 'lit';
import { customElement } from 'lit/decorators.js';
import { trainDtypes } from '../../hardware/dtype.ts';
import {
  attentionBackends,
  crossEntropyKernelChoices,
  cudaGraphImpls,
  fp8Formats,
} from '../../projection/layer/kernel-options.ts';
import { fp4Formats, fp8Recipes } from '../../megatron/low-precision.ts';
import { layerArchs } from '../../megatron/layer-arch.ts';
import { defaultActivationOffload } from '../../megatron/activation-offload.ts';
import { budgetDegrees, parseGlobalBatch, resolveGlobalBatch } from '../../megatron/global-batch.ts';
import { systemNames, systems } from '../../hardware/systems.ts';
import { formatRankSlowdown, parseRankSlowdown } from '../../core/rank-slowdown.ts';
import type { ControlField } from '../settings/field-issues.ts';
import { machineNames } from '../settings/machine-choice.ts';
import { loadSystemFile, loadedSystemFile, systemFilePrefix } from '../settings/system-files.ts';
import { parseSystemFile } from '../../calibrate/system-file.ts';
import { clusterModelOf } from '../settings/cluster-model.ts';
import { renderClusterModelControls, type ClusterModelHost } from './cluster-model-controls.ts';
import { settingSwitch } from './setting-switch.ts';
import { machineModes, settingsTable, type SettingField, type Settings } from '../settings/state.ts';
import { recomputeChoices } from '../../megatron/parallel-layout.ts';
import { fsdpSettingWords } from '../settings/fsdp-setting.ts';
import { SettingsPanel } from './settings-panel.ts';

/**
 * `<tp-machine-controls>`: the machine of the timeline and of the cluster panel. Properties down:
 * `settings`, `issues` (shown under the control they name). Events up: `settings-change`, as
 * `<tp-controls>` sends it. A number that does not parse is refused here with its message.
 */
@customElement('tp-machine-controls')
export class TpMachineControls extends SettingsPanel {
  /** The cluster-model fieldset's view of this panel (cluster-model-controls.ts). */
  private readonly clusterModelHost: ClusterModelHost = {
    emit: (settings, field) => this.emit(settings, field),
    refuse: (field, message) => this.refuse(field, message),
    errorsFor: (field) => this.errorsFor(field),
  };

  /** A control's change handler: its value parsed into `field`, or the parser's message kept under the control. */
  private onParsed<F extends ControlField>(s: Settings, field: F, parse: (text: string) => Settings[F]) {
    return (e: Event): void => {
      try {
        this.emit({ ...s, [field]: parse((e.target as HTMLInputElement).value) }, field);
      } catch (err) {
        this.refuse(field, err);
      }
    };
  }

  /**
   * A system file chosen (or dropped on the control): read as `npm run project -- --system file:PATH`
   * reads it (calibrate/system-file.ts), kept for this tab, and chosen as the system.
   */
  private onSystemFile(s: Settings) {
    return async (e: Event): Promise<void> => {
      const file = (e.target as HTMLInputElement).files?.[0];
      if (!file) return;
      try {
        const system = parseSystemFile(await file.text(), file.name);
        this.emit({ ...s, system: loadSystemFile(file.name, system) }, 'system');
      } catch (err) {
        this.refuse('system', err);
      }
    };
  }

  /**
   * A number read by its settings row (a whole number ≥ 1 unless `range` says otherwise); `placeholder`
   * says what an empty input means (bucket and the offload's tuning: Megatron's default).
   */
  private number<F extends 'layers' | 'gpus' | 'cp' | 'bucket' | 'offloadfrac' | 'offloadmin' | 'offloaddelta'>(
    s: Settings,
    field: F,
    label: string,
    placeholder = '',
    range: { readonly min: number; readonly max?: number; readonly step: number | 'any'; readonly wide?: boolean } = {
      min: 1,
      step: 1,
    },
  ): TemplateResult {
    const row: SettingField<Settings[F]> = settingsTable[field];
    return html`<label
        >${label}
        <input
          type="number"
          class=${range.wide ? 'wide' : nothing}
          min=${range.min}
          max=${range.max ?? nothing}
          step=${range.step}
          placeholder=${placeholder}
          data-control=${field}
          .value=${String(s[field] ?? '')}
          @change=${this.onParsed(s, field, row.parse)}
      /></label>
      ${this.errorsFor(field)}`;
  }

  /** A select of one kernel switch of the cluster panel (src/projection/layer/kernel-options.ts). */
  private kernelChoice<K extends 'layerArch' | 'attn' | 'fp8' | 'fp8recipe' | 'fp4' | 'graphs' | 'ce'>(
    s: Settings,
    field: K,
    label: string,
    values: readonly Settings[K][],
  ): TemplateResult {
    return html`<label
        >${label}
        <select
          data-control=${field}
          @change=${(e: Event) =>
            this.emit({ ...s, [field]: (e.target as HTMLSelectElement).value as Settings[K] }, field)}
        >
          ${values.map((v) => html`<option value=${v} ?selected=${v === s[field]}>${v}</option>`)}
        </select></label
      >
      ${this.errorsFor(field)}`;
  }

  /**
   * The global batch: "auto" or sequences per step. The cluster panel and the rank mesh take G = b·d·m
   * (their rule is a message at m's control); the advisor, the machine picture and the overlap ablation
   * split G over the GPU budget N at every t of budgetDegrees(N) with p = 1 (b·N when t = 1): that rule, as they check it, is this one.
   */
  private globalBatch(s: Settings): TemplateResult {
    let invalid = '';
    try {
      resolveGlobalBatch(s.gbatch, clusterModelOf(s).sizes.b, s.gpus, budgetDegrees(s.gpus));
    } catch (err) {
      invalid = `The advisor, the machine picture and the overlap ablation split the global batch over the GPU budget N = ${s.gpus} (the cluster panel and the rank mesh take G = b·d·m instead): ${err instanceof Error ? err.message : String(err)}`;
    }
    return html`<label
        >global batch (sequences; auto = b·N)
        <input
          type="text"
          inputmode="numeric"
          data-control="gbatch"
          .value=${String(s.gbatch)}
          @change=${(e: Event) => {
            try {
              this.emit({ ...s, gbatch: parseGlobalBatch((e.target as HTMLInputElement).value) }, 'gbatch');
            } catch (err) {
              this.refuse('gbatch', err);
            }
          }}
      /></label>
      ${this.errorsFor('gbatch')}
      ${invalid && !this.local.gbatch ? html`<p class="error" role="alert" data-error-for="gbatch">${invalid}</p>` : nothing}`;
  }

  /** A word of a fixed list, parsed by its settings row (so the hash and the control say the same). */
  private words<F extends 'recompute' | 'fsdp'>(s: Settings, field: F, label: string, words: readonly string[]) {
    const { format, parse } = settingsTable[field];
    const now = (format as (v: Settings[F]) => string)(s[field]);
    return html`<label
        >${label}
        <select data-control=${field} @change=${this.onParsed(s, field, parse as (t: string) => Settings[F])}>
          ${words.map((w) => html`<option value=${w} ?selected=${w === now}>${w}</option>`)}
        </select></label
      >
      ${this.errorsFor(field)}`;
  }

  /**
   * The cluster panel's data-parallel and memory flags (cluster-flags.ts): every flag the advisor
   * searches has one here or in the mesh controls (p, v, the distributed optimizer).
   */
  private clusterFlags(s: Settings): TemplateResult {
    return html`${this.number(s, 'cp', 'context parallel cp (--context-parallel-size)')}
      ${this.words(s, 'recompute', '--recompute-granularity', recomputeChoices)}
      ${
        s.recompute === 'selective'
          ? html`<label
                >--recompute-modules
                <input
                  type="text"
                  data-control="rmodules"
                  .value=${settingsTable.rmodules.format(s.rmodules)}
                  @change=${this.onParsed(s, 'rmodules', settingsTable.rmodules.parse)}
              /></label>
              ${this.errorsFor('rmodules')}`
          : nothing
      }
      ${settingSwitch(this.clusterModelHost, s, 'ogr', '--overlap-grad-reduce')} ${settingSwitch(this.clusterModelHost, s, 'opg', '--overlap-param-gather')}
      ${this.number(s, 'bucket', '--ddp-bucket-size (parameters)', 'max(40M, 1M·DP·cp)')}
      ${
        s.bucket !== null && !s.ogr && s.fsdp === null
          ? html`<p class="hint" data-note-for="bucket">
              Without --overlap-grad-reduce Megatron reduces the gradients in one bucket and ignores the size
              (training.py:1565-1566).
            </p>`
          : nothing
      }
      ${settingSwitch(this.clusterModelHost, s, 'p2pov', 'pipeline p2p overlap (with v > 1; off: --no-overlap-p2p-communication)')}
      ${this.words(s, 'fsdp', 'FSDP (Megatron-FSDP strategy, or FSDP2)', fsdpSettingWords)}
      ${settingSwitch(this.clusterModelHost, s, 'fp8pg', s.fp4 !== 'none' ? '--fp4-param-gather' : '--fp8-param-gather')}
      ${this.typed(s, 'offload', '--offload-modules (fine-grained activation offloading)', 'off or core_attn,attn_proj')}
      ${s.offload.length ? this.offloadTuning(s) : nothing}
      ${this.typed(s, 'cpuoffload', '--optimizer-offload-fraction (--optimizer-cpu-offload)', 'off or 0.5')}
      ${s.cpuoffload !== null ? settingSwitch(this.clusterModelHost, s, 'cpuov', '--overlap-cpu-optimizer-d2h-h2d') : nothing}`;
  }

  /**
   * The fine-grained offload's tuning flags, shown while `offload` is set; empty is Megatron's default
   * (transformer_config.py:1247, :1256, :1262), a value Megatron asserts against refused at its input.
   */
  private offloadTuning(s: Settings): TemplateResult {
    const whole = { min: 0, step: 1, wide: true } as const;
    const d = defaultActivationOffload;
    return html`${this.number(s, 'offloadfrac', '--activation-offload-fraction', String(d.fraction), { min: 0, max: 1, step: 'any' })}
    ${this.number(s, 'offloadmin', '--min-offloaded-tensor-size (elements)', String(d.minTensorElements), whole)}
    ${this.number(s, 'offloaddelta', '--delta-offload-bytes-across-pp-ranks (bytes)', String(d.deltaBytesPerPpRank), whole)}`;
  }

  /** A text setting read by its settings-table parser, refused here with the parser's message. */
  private typed<F extends 'offload' | 'cpuoffload' | 'gscope'>(
    s: Settings,
    field: F,
    label: string,
    placeholder: string,
  ): TemplateResult {
    const row: SettingField<Settings[F]> = settingsTable[field];
    return html`<label
        >${label}
        <input
          type="text"
          placeholder=${placeholder}
          data-control=${field}
          .value=${row.format(s[field])}
          @change=${this.onParsed(s, field, row.parse)}
      /></label>
      ${this.errorsFor(field)}`;
  }

  /** A straggler on purpose: "rank:factor" or "off" (core/rank-slowdown.ts), refused here with its message. */
  private slowdown(s: Settings, field: 'slow' | 'slowlink', label: string): TemplateResult {
    return html`<label
        >${label}
        <input
          type="text"
          placeholder="off or rank:factor"
          data-control=${field}
          .value=${formatRankSlowdown(s[field])}
          @change=${this.onParsed(s, field, (v) => parseRankSlowdown(field, v.trim()))}
      /></label>
      ${this.errorsFor(field)}`;
  }

  protected override render() {
    const s = this.settings;
    if (!s) return nothing;
    const custom = !(systemNames as readonly string[]).includes(s.system);
    return html`<fieldset>
      <legend>Machine</legend>
      ${machineModes.map(
        (m) =>
          html`<label class="check"
            ><input
              type="radio"
              name="machine"
              data-control="machine"
              value=${m}
              .checked=${s.machine === m}
              @change=${() => this.emit({ ...s, machine: m }, 'machine')}
            />
            ${machineNames[m]}</label
          >`,
      )}
      ${this.errorsFor('machine')}
      <label
        >system
        <select
          data-control="system"
          @change=${(e: Event) => this.emit({ ...s, system: (e.target as HTMLSelectElement).value }, 'system')}
        >
          ${systemNames.map((n) => html`<option value=${n} ?selected=${n === s.system}>${systems[n].label}</option>`)}
          ${
            custom
              ? html`<option value=${s.system} selected>
                  ${loadedSystemFile(s.system)?.label ?? s.system}${
                    s.system.startsWith(systemFilePrefix) ? ` (${s.system})` : ''
                  }
                </option>`
              : nothing
          }
        </select></label
      >
      <label
        >system file
        <input type="file" accept=".json,application/json" data-control="system-file" @change=${this.onSystemFile(s)}
      /></label>
      ${this.errorsFor('system')}
      <label
        >projected dtype
        <select
          data-control="dtype"
          @change=${(e: Event) =>
            this.emit({ ...s, dtype: (e.target as HTMLSelectElement).value as Settings['dtype'] }, 'dtype')}
        >
          ${trainDtypes.map((d) => html`<option value=${d} ?selected=${d === s.dtype}>${d}</option>`)}
        </select></label
      >
      ${this.errorsFor('dtype')}
      <p class="hint">The WebGPU run on this page is always fp32; the dtype is the real cluster's.</p>
      ${renderClusterModelControls(this.clusterModelHost, s)}
      ${this.number(s, 'layers', 'layers L')}
      ${s.cmodel.startsWith('hf:') ? html`<p class="hint" data-note-for="layers">The cluster model takes its L from its config.json (num_hidden_layers); this L is the scenarios' and the page layer's.</p>` : nothing}
      ${this.number(s, 'gpus', 'GPU budget N (t × p × DP)')}
      ${this.globalBatch(s)}
      ${this.kernelChoice(s, 'layerArch', 'architecture (--arch)', layerArchs)}
      ${this.kernelChoice(s, 'attn', 'attention backend', attentionBackends)}
      ${this.kernelChoice(s, 'fp8', 'fp8 format', fp8Formats)}
      ${this.kernelChoice(s, 'fp8recipe', 'fp8 recipe (--fp8-recipe)', fp8Recipes)}
      ${this.kernelChoice(s, 'fp4', 'fp4 format (--fp4-format, NVFP4)', fp4Formats)}
      ${this.kernelChoice(s, 'graphs', 'CUDA graphs (--cuda-graph-impl)', cudaGraphImpls)}
      ${this.typed(s, 'gscope', 'capture scope (--cuda-graph-modules)', 'full or attn,mlp')}
      ${this.kernelChoice(s, 'ce', 'cross entropy (--cross-entropy)', crossEntropyKernelChoices)}
      ${this.clusterFlags(s)}
      ${this.slowdown(s, 'slow', 'straggler: slow rank (each kernel f×)')}
      ${this.slowdown(s, 'slowlink', 'slow link out of rank (each chunk sent f×)')}
    </fieldset>`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-machine-controls': TpMachineControls;
  }
}
