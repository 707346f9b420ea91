// <tp-trace-view>: drop or pick the per-rank PyTorch profiler traces of a real job; see its ranks on
// the playground's timeline (same lanes, colours, exposed hatching) with per-rank totals.
import * as Comlink from 'comlink';
import { LitElement, css, html, nothing } from 'lit';
import { customElement, state } from 'lit/decorators.js';
import { measuredTimeline, type MeasuredTimeline } from '../../kineto/measured-timeline.ts';
import { jobManifestFile, readJobManifest, type JobManifest } from '../../megatron/job-manifest.ts';
import { calibratedSystemFile, parseSystemFile } from '../../calibrate/system-file.ts';
import type { SystemSpec } from '../../hardware/systems.ts';
import { loadSnapshot, type LoadedSnapshot } from '../../kineto/memory-snapshot.ts';
import { memorySnapshotFilePattern } from '../../megatron/memory-snapshot-script.ts';
import './tp-trace-memory.ts';
import { panelStyles } from '../shared/page-style.ts';
import { formatBytes, formatMs } from '../../core/format.ts';
import type { TraceLoad, TraceReader, TraceReadProgress } from './trace-read.worker.ts';
import '../timeline/tp-timeline.ts';
import './tp-trace-projection.ts';
import './tp-trace-what-if.ts';
import './tp-trace-totals.ts';

/** Kernels drawn at most per window (SVG blocks; the tables count every kernel). */
const maxDrawn = 20_000;

/** The allocator history in a dropped memory-rank-<r>.json (the bundle's memory_snapshot_json.py output). */
async function readSnapshot(file: File): Promise<LoadedSnapshot> {
  let json: unknown;
  try {
    json = JSON.parse(await file.text());
  } catch (e) {
    throw new Error(`${file.name}: not JSON (${e instanceof Error ? e.message : String(e)}).`, { cause: e });
  }
  return loadSnapshot(json, file.name);
}

/**
 * `<tp-trace-view>`: a drop zone and file picker (`input[type=file]`), the read progress
 * (`[data-trace-status]`), a message for bad input (`[data-trace-error]`), then a step picker,
 * `<tp-timeline>` of the chosen ProfilerStep#N (or the whole trace) and `<tp-trace-totals>`.
 * Files are read and analysed in a worker; only their GPU side is kept.
 */
@customElement('tp-trace-view')
export class TpTraceView extends LitElement {
  static override styles = [
    panelStyles,
    css`
      .drop {
        border: 2px dashed #8aa0bd;
        border-radius: 10px;
        padding: 14px;
        background: #f4f7fb;
      }
      .drop[data-over='true'] {
        background: #e2ecf9;
        border-color: #2a6cc4;
      }
      .bar {
        display: flex;
        flex-wrap: wrap;
        gap: 8px 18px;
        align-items: center;
        margin: 10px 0;
      }
      select {
        font-size: 15px;
        padding: 3px 8px;
      }
      .error {
        color: #8a0010;
        font-weight: 600;
      }
      ul.notes {
        margin: 4px 0;
        padding-left: 20px;
        font-size: 14px;
      }
    `,
  ];

  @state() private load: TraceLoad | undefined;
  /** The job bundle's manifest dropped with the traces: it selects the projection. */
  @state() private job: JobManifest | undefined;
  /** A rank's allocator history dropped with them (the bundle's memory-rank-<r>.json). */
  @state() private memory: LoadedSnapshot | undefined;
  /** A calibrated system file dropped with them (docs/calibrate.md): the projection runs on it. */
  @state() private calibrated: SystemSpec | undefined;
  @state() private status = '';
  @state() private error = '';
  @state() private over = false;
  /** The window shown: a ProfilerStep number, or 'all'. */
  @state() private step: number | 'all' = 'all';
  private worker: Worker | undefined;
  private windows = new Map<number | 'all', MeasuredTimeline>();

  override disconnectedCallback(): void {
    this.worker?.terminate();
    this.worker = undefined;
    super.disconnectedCallback();
  }

  /**
   * Reads `files` (one per rank) in a worker; a new read replaces the shown job only when it
   * succeeds. A megatron-job.json among them (a job bundle's manifest) is read here and selects
   * the projection.
   */
  async readFiles(dropped: readonly File[]): Promise<void> {
    const manifest = dropped.find((f) => f.name === jobManifestFile);
    const systemFile = dropped.find((f) => f.name === calibratedSystemFile);
    const snapshots = dropped.filter((f) => memorySnapshotFilePattern.test(f.name));
    const files = dropped.filter((f) => f !== manifest && f !== systemFile && !snapshots.includes(f));
    this.error = '';
    let job: JobManifest | undefined;
    let memory: LoadedSnapshot | undefined;
    try {
      if (manifest) job = readJobManifest(await manifest.text(), manifest.name);
      if (systemFile) this.calibrated = parseSystemFile(await systemFile.text(), systemFile.name);
      if (snapshots.length > 1)
        throw new Error(
          `${snapshots.map((f) => f.name).join(', ')}: drop one rank's memory snapshot at a time (Megatron writes it on the last rank).`,
        );
      if (snapshots[0]) memory = await readSnapshot(snapshots[0]);
    } catch (e) {
      this.error = e instanceof Error ? e.message : String(e);
      return;
    }
    if (memory) {
      this.memory = memory;
      this.job = job ?? this.job;
    }
    if (!files.length) return;
    this.status = `reading ${files.length} file${files.length > 1 ? 's' : ''}…`;
    this.worker?.terminate();
    this.worker = new Worker(new URL('./trace-read.worker.ts', import.meta.url), {
      type: 'module',
      name: 'trace reader',
    });
    const reader = Comlink.wrap<TraceReader>(this.worker);
    const progress = (p: TraceReadProgress): void => {
      this.status = `reading ${p.file}: ${formatBytes(p.bytes)} of ${formatBytes(p.totalBytes)} (${Math.round((100 * p.bytes) / Math.max(1, p.totalBytes))}%)`;
    };
    try {
      const load = await reader.read([...files], Comlink.proxy(progress));
      this.windows.clear();
      this.load = load;
      this.job = job;
      const first = load.trace.ranks[0]!.steps[0]?.step;
      this.step = first ?? 'all';
      const kept = load.trace.ranks.reduce((a, r) => a + r.stats.kept, 0);
      const events = load.trace.ranks.reduce((a, r) => a + r.stats.events, 0);
      this.status = `read ${load.trace.ranks.length} rank${load.trace.ranks.length > 1 ? 's' : ''} in ${formatMs(load.readMs)}: kept ${kept} GPU events of ${events}`;
    } catch (e) {
      this.error = e instanceof Error ? e.message : String(e);
      this.status = 'could not read the traces';
    } finally {
      this.worker?.terminate();
      this.worker = undefined;
    }
  }

  private window(): MeasuredTimeline | undefined {
    if (!this.load) return undefined;
    let w = this.windows.get(this.step);
    if (!w) {
      w = measuredTimeline(this.load.trace, this.step === 'all' ? undefined : this.step, maxDrawn);
      this.windows.set(this.step, w);
    }
    return w;
  }

  private onDrop(e: DragEvent): void {
    e.preventDefault();
    this.over = false;
    void this.readFiles([...(e.dataTransfer?.files ?? [])]);
  }

  private onPick(e: Event): void {
    const input = e.target as HTMLInputElement;
    void this.readFiles([...(input.files ?? [])]);
    input.value = '';
  }

  protected override render() {
    const load = this.load;
    const tl = this.window();
    const steps = load
      ? [...new Set(load.trace.ranks.flatMap((r) => r.steps.map((s) => s.step)))].sort((a, b) => a - b)
      : [];
    const notes = load
      ? [...load.trace.notes, ...load.trace.ranks.flatMap((r) => r.notes.map((n) => `${r.file}: ${n}`))]
      : [];
    return html`
      <h2>Measured run: PyTorch profiler (Kineto) traces</h2>
      <div
        class="drop"
        data-drop
        data-over=${String(this.over)}
        @dragover=${(e: DragEvent) => {
          e.preventDefault();
          this.over = true;
        }}
        @dragleave=${() => (this.over = false)}
        @drop=${this.onDrop}
      >
        <p>
          Drop the trace files of one job here, one per rank (<code>.json</code> or <code>.json.gz</code>, as
          <code>torch.profiler</code> writes them), with the job bundle's <code>${jobManifestFile}</code> when there
          is one, a rank's <code>memory-rank-&lt;r&gt;.json</code> (its allocator history, written with
          <code>RECORD_MEMORY=1</code>) and a <code>${calibratedSystemFile}</code> (<code>npm run project -- --calibrate</code>:
          the projection runs on it), or pick them:
          <input type="file" multiple accept=".json,.gz,application/json,application/gzip" @change=${this.onPick} />
        </p>
        <p class="note">
          Read in a worker, as a stream: only GPU kernels, copies, ProfilerStep#N marks and launch times are kept (about
          115 bytes per GPU event); CPU ops, Python frames and flows are counted and dropped. Ranks come from
          <code>distributedInfo</code>, else from the file order.
        </p>
      </div>
      <p role="status" data-trace-status>${this.status}</p>
      ${this.error ? html`<p class="error" role="alert" data-trace-error>${this.error}</p>` : nothing}
      <tp-trace-memory .snapshot=${this.memory} .job=${this.job}></tp-trace-memory>
      ${
        load && tl
          ? html`
              <div class="bar">
                <label
                  >Window
                  <select
                    data-step-select
                    @change=${(e: Event) => {
                      const v = (e.target as HTMLSelectElement).value;
                      this.step = v === 'all' ? 'all' : Number(v);
                    }}
                  >
                    ${steps.map((s) => html`<option value=${s} ?selected=${this.step === s}>ProfilerStep#${s}</option>`)}
                    <option value="all" ?selected=${this.step === 'all'}>whole trace</option>
                  </select></label
                >
                <span data-ranks=${load.trace.ranks.length}
                  >${load.trace.ranks.length} ranks:
                  ${load.trace.ranks.map((r) => `${r.rank} (${r.file})`).join(', ')}</span
                >
              </div>
              ${
                tl.omitted
                  ? html`<p class="note" data-omitted=${tl.omitted}>
                      This window holds more kernels than the timeline draws: the first ${maxDrawn} are drawn,
                      ${tl.omitted} later ones are not (the tables count all).
                    </p>`
                  : nothing
              }
              <tp-timeline
                .timeline=${tl}
                phase="both"
                caption=${`Measured on the job's GPUs (${[...new Set(load.trace.ranks.flatMap((r) => r.deviceNames))].join(', ') || 'device not recorded'}); ${this.step === 'all' ? 'the whole trace' : `ProfilerStep#${this.step}`}, from ${formatMs(tl.originMs)} on the job clock. Every compute stream shares the compute lane.`}
              ></tp-timeline>
              <tp-trace-totals .trace=${load.trace} .analysis=${load.analysis}></tp-trace-totals>
              <tp-trace-projection
                .analysis=${load.analysis}
                .step=${this.step}
                .gpus=${load.trace.ranks[0]!.worldSize ?? load.trace.ranks.length}
                .deviceNames=${[...new Set(load.trace.ranks.flatMap((r) => r.deviceNames))]}
                .job=${this.job}
                .calibrated=${this.calibrated}
              ></tp-trace-projection>
              <tp-trace-what-if .trace=${load.trace} .job=${this.job} .calibrated=${this.calibrated}></tp-trace-what-if>
              ${
                notes.length
                  ? html`<h3>Notes</h3>
                      <ul class="notes">
                        ${notes.map((n) => html`<li>${n}</li>`)}
                      </ul>`
                  : nothing
              }
            `
          : nothing
      }
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-trace-view': TpTraceView;
  }
}
