// The page's run on screen (templates of <tp-app>): banners, totals with the oracle, the chosen view, the cluster panel, shapes and exports.
import { tpOverlapChunks } from '../../parallel/tp-overlap.ts';
import { html, nothing, type TemplateResult } from 'lit';
import { enableWebGpuHint, isCpuAdapter } from '../../kernels/adapter.ts';
import { chooseTransport } from '../../ranks/transport.ts';
import type { PlaygroundResult, PlaygroundRunner } from '../../session/playground-runner.ts';
import { formatMs } from '../../core/format.ts';
import type { PageRunState } from './page-runs.ts';
import { clusterModelOf, type ClusterModelSpec } from '../settings/cluster-model.ts';
import type { SettingsChangeDetail } from '../settings/settings-change.ts';
import { configOf, hashFromSettings, type Settings } from '../settings/state.ts';
import { moeExportCaveats, moeOn, moeRanks, moeSetupOf } from '../settings/moe-settings.ts';
import {
  renderMoeBadge,
  renderMoeCard,
  renderMoePlan,
  renderMoeTimeline,
  renderMoeTotals,
  moePlanOfRun,
} from './moe-cards.ts';
import type { MoeRunState } from './moe-runs.ts';
import './tp-oracle-badge.ts';
import './tp-shapes.ts';
import type { TimelineZoomDetail } from '../timeline/tp-timeline.ts';
import '../timeline/tp-timeline.ts';
import { bufferClassViews, rankMemoryLanes } from '../../session/memory-lanes.ts';
import { timelineStragglers } from '../timeline/timeline-waits.ts';
import { clusterFlagsOf } from '../settings/cluster-flags.ts';

const transportWords: Record<string, string> = {
  'sab-ring': 'the SharedArrayBuffer ring (shared memory + Atomics)',
  'message-port': 'the MessagePort ring (chunks transferred between workers)',
};

/** What the oracle badge says where it has no verdict, by where the rank workers stand. */
const oracleReason: Record<PageRunState['ranks'], string> = {
  done: '',
  running: 'the rank workers are running the layer against TP=1',
  stopped: 'the settings changed before the rank workers finished',
  none: 'no WebGPU here: the layer did not run',
  deferred: 'the rank workers run this view’s programs; the layer runs against TP=1 when the timeline is shown',
  // with experts set the badge is the MoE run's (renderMoeBadge); this is said only if that were bypassed
  moe: 'the rank workers run the layer with its MoE block in place of this dense MLP',
};

/** The cluster model of the settings, or why it cannot be read (shown by the panel; the cmodel control says it too). */
function clusterModelOrError(s: Settings): { model?: ClusterModelSpec; error: string } {
  try {
    return { model: clusterModelOf(s), error: '' };
  } catch (e) {
    return { error: e instanceof Error ? e.message : String(e) };
  }
}

/** The banners above a run: no WebGPU, no cross-origin isolation, unknown link keys, a failed run, settings that cannot run. */
export function renderBanners(run: PageRunState, unknownKeys: readonly string[], stale: boolean): TemplateResult {
  const isolated = globalThis.crossOriginIsolated === true;
  return html`
    ${run.gpu === 'ok' ? nothing : html`<p class="banner warn" data-banner="no-webgpu">${run.gpu === 'none' ? 'This browser exposes no WebGPU' : 'WebGPU is present but no adapter was found'}, so nothing runs here: the plan, shapes and a timeline modeled from the cost model are shown instead. ${enableWebGpuHint}</p>`}
    ${isolated || run.gpu !== 'ok' ? nothing : html`<p class="banner info" data-banner="message-port">This page is not cross-origin isolated, so the ranks exchange data over the MessagePort transport (the shared-memory ring needs the headers Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp).</p>`}
    ${unknownKeys.map((m) => html`<p class="banner warn" data-banner="hash">Link: ${m}</p>`)}
    ${run.runError ? html`<p class="banner error" role="alert" data-banner="run-error">The run failed: ${run.runError}${run.result ? ' The last good run is still shown.' : ''}</p>` : nothing}
    ${stale && run.result && !run.runError && run.issues.length ? html`<p class="banner error" data-banner="stale">These settings cannot run (see the message in red beside the control); the last good run (t = ${run.result.config.tp}) is still shown.</p>` : nothing}
  `;
}

const liveMemoryWords =
  "stacked by lifetime class and placed on the timeline above (its zoom and pan too); the dashed line is the accounting's weights + gradients + activations kept for backward, which the recorded classes equal. Like autograd, the layer frees each tensor after the last op that reads it (a kept activation in backward), so the peak falls in backward, where the gradients made so far and the activations not yet freed weigh most.";
const liveMemoryCaption = `Every buffer each rank's step made or freed, recorded on the ranks, ${liveMemoryWords} Staging is what the step took from the collectives' pool of read-back and upload buffers (kept across steps, outside the accounting), not what earlier work left idle there.`;
const replayedMemoryCaption = `Replayed from the plan: no WebGPU here, so nothing ran; the layer's own code run on shapes alone gives every buffer each rank's step would make or free, ${liveMemoryWords} No staging: the collectives' pool exists only on a GPU.`;

/** Live bytes per rank over the step, under the timeline. */
function liveMemory(r: PlaygroundResult): TemplateResult {
  const lanes = rankMemoryLanes(r.memory ?? [], r.timeline, r.accounting.memory);
  return html`<tp-live-memory
    .lanes=${lanes}
    .classes=${bufferClassViews}
    heading=${r.memoryReplayed ? 'Live memory over the step, replayed from the plan' : 'Live memory over the step'}
    caption=${r.memoryReplayed ? replayedMemoryCaption : liveMemoryCaption}
    ?data-replayed=${r.memoryReplayed === true}
  ></tp-live-memory>`;
}

/** The memory chart under the timeline takes the timeline's visible window (zoom, pan) as its own, in the timeline's columns. */
function followZoom(e: CustomEvent<TimelineZoomDetail>): void {
  const m = (e.currentTarget as HTMLElement).querySelector('tp-live-memory');
  if (!m) return;
  const left = m.getBoundingClientRect().left;
  m.domain = [e.detail.t0, e.detail.t1];
  m.columns = [e.detail.left - left, e.detail.right - left];
}

/**
 * The views that run their own programs on the runner's rank workers (classroom, GEMM efficiency):
 * they need no layer result, so the page shows them before the layer has run.
 */
export function renderWorkerView(s: Settings, runner: PlaygroundRunner): TemplateResult {
  return s.view === 'classroom'
    ? html`<tp-classroom
        .tp=${s.tp}
        .step=${s.step - 1}
        .pools=${runner}
        @step-change=${(e: CustomEvent<{ step: number }>) =>
          (location.hash = hashFromSettings({ ...s, step: e.detail.step + 1 }))}
      ></tp-classroom>`
    : html`<tp-gemm-view
        .config=${configOf(s)}
        .net=${s.net}
        .system=${s.system}
        .dtype=${s.dtype}
        .overlap=${s.overlap}
        .pools=${runner}
      ></tp-gemm-view>`;
}

/** The top card's totals of the dense layer's run: t, the step and its slowest rank, the worst exposed communication, the straggler; `transport` the note on the ranks' transport. */
function denseTotals(r: PlaygroundResult, transport: TemplateResult): TemplateResult {
  const tl = r.timeline;
  const exposed = tl.totals.reduce((m, x) => Math.max(m, x.exposedMs), 0);
  const straggler = timelineStragglers(tl).verdict.straggler;
  return html`<div class="totals">
    <div>
      t = <strong data-shown-tp>${r.config.tp}</strong>${r.config.sp ? ' with SP' : ''} · step
      <strong>${formatMs(tl.stepMs)}</strong> (slowest: rank ${tl.slowestRank}) · exposed communication, worst rank:
      <strong data-exposed-ms=${exposed}>${formatMs(exposed)}</strong
      >${tl.overlap ? ' (dgrad all-reduce overlapped with wgrad)' : ''}${
        r.config.tp > 1 && tpOverlapChunks(r.config) > 1
          ? `; the MLP's GEMMs in ${tpOverlapChunks(r.config)} chunks in ring order, under their collectives (tpoverlap)`
          : ''
      }${
        straggler === null
          ? nothing
          : html` · straggler: <strong data-straggler=${straggler}>rank ${straggler}</strong> (the others wait
              for it inside the collectives)`
      }
    </div>
    ${transport}
  </div>`;
}

/** After the adapter's name: what its recorded times are worth where it is SwiftShader. */
const cpuAdapterNote = (adapter: string): string =>
  isCpuAdapter(adapter) ? ' (SwiftShader runs WebGPU on the CPU: times recorded on it say nothing about a GPU)' : '';

/**
 * A run on screen: totals and the oracle badge (with experts set, the MoE run's totals and its block stage by stage) (checking while the rank workers run), the view
 * (timeline, classroom or GEMM efficiency; the latter two borrow the runner's pool), the cluster
 * panel, the shapes and the exports.
 */
export function renderRun(
  r: PlaygroundResult,
  s: Settings,
  run: PageRunState,
  runner: PlaygroundRunner,
  stale: boolean,
  onChange: (e: CustomEvent<SettingsChangeDetail>) => void,
  moe: MoeRunState,
): TemplateResult {
  const tl = r.timeline;
  const transport = r.transport ?? (run.gpu === 'ok' ? chooseTransport() : undefined);
  // With experts set the top card shows the MoE run, recorded on its own rank workers.
  const adapter = moeOn(s) ? moe.adapter : r.adapter;
  const transportNote = html`<div class="note" data-source="transport">
    ${transport ? `Ranks exchange data over ${transportWords[transport] ?? transport}` : 'No transport: nothing runs without WebGPU'}${adapter ? `; GPU: ${adapter}${cpuAdapterNote(adapter)}` : run.ranks === 'running' ? `; starting ${r.config.tp} rank worker${r.config.tp > 1 ? 's' : ''}…` : ''}.
  </div>`;
  const link = `${location.origin}${location.pathname}${hashFromSettings(s)}`;
  const cluster = clusterModelOrError(s);
  const sources = `Machine: ${run.shownMachine} · compute: ${r.computeSource}. Communication: ${r.commSource}.`;
  return html`
    <section class="card top ${stale ? 'stale' : ''}">
      ${moeOn(s) ? renderMoeTotals(moe, s, transportNote) : denseTotals(r, transportNote)}
      ${
        moeOn(s)
          ? renderMoeBadge(moe, s, run.gpu === 'ok')
          : html`<tp-oracle-badge
              .oracle=${r.oracle}
              .cpuOracle=${r.cpuOracle}
              cpuSkipped=${r.cpuSkipped ?? ''}
              .tp=${r.config.tp}
              ?checking=${run.ranks === 'running'}
              reason=${oracleReason[run.ranks]}
            ></tp-oracle-badge>`
      }
      ${moeOn(s) ? renderMoePlan(moe, s) : nothing}
    </section>
    <section class="card ${stale ? 'stale' : ''}" data-sources @timeline-zoom=${followZoom}>
      ${
        s.view === 'timeline'
          ? moeOn(s)
            ? renderMoeTimeline(moe, s)
            : html`<tp-timeline .timeline=${tl} .phase=${s.pass} caption=${sources}></tp-timeline>
                ${r.memory ? liveMemory(r) : nothing}`
          : renderWorkerView(s, runner)
      }
    </section>
    ${s.view === 'timeline' && moeOn(s) ? renderMoeCard(moe, s) : nothing}
    <section class="card ${stale ? 'stale' : ''}">
      <tp-cluster-panel
        .config=${{ ...configOf(s), ...cluster.model?.sizes }}
        .model=${cluster.model}
        modelError=${cluster.error}
        .settings=${s}
        @settings-change=${onChange}
        .system=${s.system}
        .dtype=${s.dtype}
        .layers=${s.layers}
        .dp=${s.dp}
        .m=${s.m}
        .overlap=${s.overlap}
        .pp=${s.pp}
        .vpp=${s.vpp}
        .layerArch=${s.layerArch}
        attn=${s.attn}
        fp8=${s.fp8}
        fp8recipe=${s.fp8recipe}
        fp4=${s.fp4}
        graphs=${s.graphs}
        ce=${s.ce}
        .gscope=${s.gscope}
        .tpOverlapChunks=${s.tpOverlapChunks}
        .flags=${clusterFlagsOf(s)}
      ></tp-cluster-panel>
    </section>
    <section class="card ${stale ? 'stale' : ''}">
      <tp-machine-picture .settings=${s} @settings-change=${onChange}></tp-machine-picture>
    </section>
    <section class="card">
      <tp-advisor-panel .settings=${s} @settings-change=${onChange}></tp-advisor-panel>
    </section>
    <section class="card">
      <tp-ablation-panel .settings=${s}></tp-ablation-panel>
    </section>
    <div class="panels ${stale ? 'stale' : ''}">
      <section class="card"><tp-shapes .plan=${r.plan} .accounting=${r.accounting} .moe=${moeOn(s) ? moePlanOfRun(moe, s) : undefined}></tp-shapes></section>
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
          .moe=${moeSetupOf(s)}
          .moeCaveats=${moeExportCaveats(s)}
          .ranks=${moeRanks(s)}
        ></tp-exports>
      </section>
    </div>
  `;
}
