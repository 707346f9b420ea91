// <tp-exports>: the run as a Perfetto/Chrome trace and as CSV, the shareable link, the matching Megatron-LM
// arguments and the Megatron-LM job bundle of the cluster panel's setup.
import { LitElement, css, html, nothing } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import { modelSizesOf, type LayerConfig } from '../../parallel/config.ts';
import {
  formatMegatronCommand,
  megatronCaveats,
  megatronLaunch,
  megatronRelease,
} from '../../megatron/megatron-args.ts';
import type { TrainDtype } from '../../hardware/dtype.ts';
import { parseSystem } from '../../hardware/systems.ts';
import { resolveGlobalBatch, type GlobalBatchSetting } from '../../megatron/global-batch.ts';
import { jobBundle } from '../../megatron/job-bundle.ts';
import { checkMegatronLaunch, ngcEnvironment } from '../../megatron/megatron-check.ts';
import type { MoeSetup } from '../../megatron/moe.ts';
import type { LogicalOutput } from '../../parallel/gather.ts';
import { tarArchive } from '../../export/tar.ts';
import { layerTensors, layerTensorsMetadata } from '../../parallel/layer-tensors.ts';
import { stepInputs } from '../../parallel/step-data.ts';
import { timelineCsv } from '../../export/csv.ts';
import { encodeSafetensors } from '../../core/safetensors.ts';
import { timelineToPerfetto } from '../../export/perfetto.ts';
import type { Timeline } from '../../schedule/schedule.ts';
import { panelStyles } from '../shared/page-style.ts';

/** A file name for the run: "tp-t4-sp-classroom.json". */
export function exportName(c: LayerConfig, preset: string, ext: string): string {
  return `tp-t${c.tp}${c.sp ? '-sp' : ''}-${preset}.${ext}`;
}

/** Starts a download of `body` as `name` (an object URL on a temporary link). */
function download(name: string, body: string | Uint8Array<ArrayBuffer>, type: string): void {
  const url = URL.createObjectURL(new Blob([body], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/**
 * `<tp-exports>`: buttons that download the timeline as Perfetto/Chrome JSON (one process per
 * rank, compute and comm threads) and the run's numbers as CSV, copy the shareable `link`, and the
 * Megatron-LM arguments of `config` with their caveats, copyable.
 */
@customElement('tp-exports')
export class TpExports extends LitElement {
  static override styles = [
    panelStyles,
    css`
      .buttons {
        display: flex;
        flex-wrap: wrap;
        gap: 8px;
        margin-bottom: 8px;
      }
      pre {
        background: #0f1b2d;
        color: #f3f6fb;
        padding: 8px 10px;
        border-radius: 6px;
        overflow: auto;
        max-height: 260px;
        font-size: 13.5px;
        margin: 6px 0;
      }
      .copied {
        color: #0a5c25;
        font-weight: 600;
      }
      ul {
        margin: 4px 0;
        padding-left: 20px;
        font-size: 14px;
      }
      input.link {
        width: 100%;
        font: inherit;
        font-size: 13px;
        padding: 3px 6px;
        box-sizing: border-box;
      }
    `,
  ];

  /** The scheduled step to export. */
  @property({ attribute: false }) timeline: Timeline | undefined;
  /** The configuration it ran. */
  @property({ attribute: false }) config: LayerConfig | undefined;
  /** The step's output, loss and gradients (absent when nothing ran): the .safetensors download. */
  @property({ attribute: false }) output: LogicalOutput | undefined;
  /** The preset name, for file names. */
  @property() preset = 'custom';
  /** The shareable link of the current settings. */
  @property() link = '';
  /** The cluster panel's machine and model: the job bundle trains this layer × `layers` on `gpus` GPUs of `system` in `dtype`. */
  @property() system = '';
  @property() dtype: TrainDtype = 'fp32';
  @property({ type: Number }) layers = 1;
  @property({ type: Number }) gpus = 1;
  @property({ attribute: false }) gbatch: GlobalBatchSetting = 'auto';
  /** The MoE block's Megatron flags (absent: the dense MLP) and how Megatron's run of them differs from the page's. */
  @property({ attribute: false }) moe: MoeSetup | undefined;
  @property({ attribute: false }) moeCaveats: readonly string[] = [];
  /** GPUs of the exported command: t, or with MoE both meshes folded (moe-settings.ts moeRanks). */
  @property({ type: Number }) ranks = 0;
  @state() private copied = '';
  @state() private bundleError = '';

  /** Downloads the job bundle (src/megatron/job-bundle.ts) as <name>.tar; a setup that cannot be bundled is named in [data-export="job-error"]. */
  private downloadBundle(c: LayerConfig): void {
    this.bundleError = '';
    try {
      const system = parseSystem(this.system);
      const name = exportName(c, this.preset, '').slice(0, -1).concat(`-${this.gpus}gpu`);
      const files = jobBundle({
        name,
        setup: {
          sizes: modelSizesOf(c),
          tp: c.tp,
          sp: c.sp,
          layers: this.layers,
          gpus: this.gpus,
          globalBatch: resolveGlobalBatch(this.gbatch, c.b, this.gpus, [c.tp]),
          overlap: true,
          ...(this.moe && { moe: this.moe }),
        },
        dtype: this.dtype,
        system: system.name,
        gpusPerNode: system.gpusPerNode,
        layer: { seed: c.seed, ropeBase: c.ropeBase, eps: c.eps },
      });
      const tar = tarArchive(name, files, Math.floor(Date.now() / 1000));
      download(`${name}.tar`, tar as Uint8Array<ArrayBuffer>, 'application/x-tar');
    } catch (e) {
      this.bundleError = `No job bundle: ${e instanceof Error ? e.message : String(e)}`;
    }
  }

  private async copy(what: string, text: string): Promise<void> {
    try {
      await navigator.clipboard.writeText(text);
      this.copied = `${what} copied`;
    } catch {
      // No clipboard permission (e.g. http or a headless browser): select the text for Ctrl+C instead.
      this.copied = `copy failed: select the ${what} and press Ctrl+C`;
    }
  }

  private downloadTensors(c: LayerConfig, out: LogicalOutput): void {
    const bytes = encodeSafetensors(layerTensors(c, stepInputs(c), out), layerTensorsMetadata(c));
    download(exportName(c, this.preset, 'safetensors'), bytes as Uint8Array<ArrayBuffer>, 'application/octet-stream');
  }

  protected override render() {
    const tl = this.timeline;
    const c = this.config;
    if (!tl || !c) return html`<p class="note">Nothing to export yet.</p>`;
    const ranks = this.ranks || c.tp;
    const launch = megatronLaunch(c, this.moe, ranks);
    const args = formatMegatronCommand(launch);
    const caveats = [...megatronCaveats(c), ...this.moeCaveats];
    // The ported start-up checks (megatron-check.ts) on an NGC container of Hopper GPUs.
    const refused = checkMegatronLaunch(launch.args, ngcEnvironment(ranks, launch.env));
    return html`
      <h2>Export</h2>
      <div class="buttons">
        <button
          data-export="perfetto"
          @click=${() => download(exportName(c, this.preset, 'json'), JSON.stringify(timelineToPerfetto(tl)), 'application/json')}
        >
          Trace for Perfetto / chrome://tracing (.json)
        </button>
        <button
          data-export="csv"
          @click=${() => download(exportName(c, this.preset, 'csv'), timelineCsv(tl.events), 'text/csv')}
        >
          Numbers (.csv)
        </button>
        ${
          this.output
            ? html`<button
                data-export="safetensors"
                title="The logical weights, inputs, output, per-token loss and every gradient of this run"
                @click=${() => this.downloadTensors(c, this.output!)}
              >
                Tensors (.safetensors)
              </button>`
            : nothing
        }
        <button data-export="link" @click=${() => void this.copy('link', this.link)}>Copy shareable link</button>
      </div>
      <input
        class="link"
        readonly
        aria-label="shareable link"
        .value=${this.link}
        @focus=${(e: Event) => (e.target as HTMLInputElement).select()}
      />
      <h3>The same layer on Megatron-LM (${megatronRelease.tag})</h3>
      <pre data-export="megatron">${args}</pre>
      ${
        refused.length
          ? html`<ul class="note" role="alert" data-export="megatron-refused">
              ${refused.map((f) => html`<li>Megatron-LM would refuse it: ${f.message} (${f.source})</li>`)}
            </ul>`
          : html`<p class="note" data-export="megatron-checked">
              Passes the ported start-up checks of Megatron-LM ${megatronRelease.tag} on ${ranks} Hopper GPUs.
            </p>`
      }
      <button
        data-export="megatron-copy"
        @click=${() => void this.copy('command', args.replace(/ \\\n\s*/g, ' ').trim())}
      >
        Copy command
      </button>
      <button data-export="job-bundle" @click=${() => this.downloadBundle(c)}>
        Download job bundle (.tar)
      </button>
      ${this.copied ? html`<span class="copied" role="status"> ${this.copied}</span>` : nothing}
      <p class="note">
        The job bundle trains this layer × ${this.layers} layers on ${this.gpus} GPUs of ${this.system} in ${this.dtype}
        (the cluster panel's setup) with Megatron-LM ${megatronRelease.tag}: launch scripts for one node, N nodes and
        Slurm, mock data by default, the PyTorch profiler on for two steps, and a manifest that lets #view=trace match
        the traces to this projection (docs/megatron-job.md).
      </p>
      ${this.bundleError ? html`<p class="note" role="alert" data-export="job-error">${this.bundleError}</p>` : nothing}
      ${
        caveats.length
          ? html`<ul data-export="caveats">
              ${caveats.map((x) => html`<li>${x}</li>`)}
            </ul>`
          : nothing
      }
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-exports': TpExports;
  }
}
