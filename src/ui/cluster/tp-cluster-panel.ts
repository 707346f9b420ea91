// <tp-cluster-panel>: the layer × L projected onto a real cluster in the mesh's layout (p, d, m), over t, with and without SP.
import { LitElement, css, html, nothing, type PropertyValues } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import type { TrainDtype } from '../../hardware/dtype.ts';
import type { SystemSpec } from '../../hardware/systems.ts';
import { systemOf } from '../settings/system-files.ts';
import { defaultFp8Recipe, type Fp4Format, type Fp8Recipe } from '../../megatron/low-precision.ts';
import { modelSizesOf, type LayerConfig } from '../../parallel/config.ts';
import { fixedBudget, type BudgetRow, type StepProjection } from '../../projection/step/cluster-projection.ts';
import {
  defaultKernelOptions,
  usesFlashAttention,
  type AttentionBackend,
  type CudaGraphImpl,
  type Fp8Format,
  type CrossEntropyKernels,
} from '../../projection/layer/kernel-options.ts';
import type { LayerArch } from '../../megatron/layer-arch.ts';
import { lifetimeClassViews, stageMemoryLanes, type MemoryLane } from '../../session/memory-lanes.ts';
import { LatestWins } from '../../session/latest-wins.ts';
import '../timeline/tp-live-memory.ts';
import { budgetLines, type BudgetLine } from '../../projection/step/cluster-summary.ts';
import { drawLineChart, type ChartSeries } from '../shared/gemm-charts.ts';
import { afterNextPaint } from '../shared/next-paint.ts';
import { chartGridStyles, panelStyles } from '../shared/page-style.ts';
import { formatBytes, formatMs } from '../../core/format.ts';
import { clusterModelName } from '../settings/cluster-model-choice.ts';
import { clusterModelSetup, clusterMoeWords, type ClusterModelSpec } from '../settings/cluster-model.ts';
import { settingsChangeEvent } from '../settings/settings-change.ts';
import type { Settings } from '../settings/state.ts';
import { clusterLaunchOf, type ClusterFlags } from '../settings/cluster-flags.ts';
import { kernelOptionsOf } from '../settings/kernel-switches.ts';
import { cudaGraphFlags, type CudaGraphModule } from '../../megatron/cuda-graph-rules.ts';
import './tp-pipeline-view.ts';

type Okay = Extract<BudgetLine, { ok: true }>;

const colors = { plain: '#2f6fb0', sp: '#d0622b', capacity: '#b00020' };

/** The t of the rows: powers of two up to a node of 8 GPUs, where Megatron keeps its TP groups. */
const clusterDegrees = [1, 2, 4, 8] as const;

/**
 * `<tp-cluster-panel>`: for the page's layer sizes and L layers on `system` in `dtype`, the mesh's
 * layout projected at each t (clusterDegrees): p stages, cp, d replicas on N = t·p·cp·d GPUs, each
 * replica running the mesh's m micro-batches (global batch G = b·d·m, Megatron's
 * get_num_microbatches), and D3 charts of tokens/s, MFU, exposed share and memory per GPU vs t,
 * without and with SP, memory against the GPU's capacity (the OOM line). Pure projection: the
 * same code as `npm run project`.
 */
@customElement('tp-cluster-panel')
export class TpClusterPanel extends LitElement {
  static override styles = [
    panelStyles,
    chartGridStyles,
    css`
      td.oom {
        color: #b00020;
        font-weight: 600;
      }
    `,
  ];

  @property({ attribute: false }) config: LayerConfig | undefined;
  /** The page's settings: the caption names the model (settings.cmodel) and its button switches it. */
  @property({ attribute: false }) settings: Settings | undefined;
  @property() system = 'v100-pcie-8';
  @property() dtype: TrainDtype = 'fp16';
  @property({ type: Number }) layers = 12;
  /** The mesh's d (settings dp) and m: every row runs d replicas of m micro-batches. */
  @property({ type: Number }) dp = 1;
  @property({ type: Number }) m = 1;
  @property({ type: Boolean }) overlap = true;
  /** p pipeline stages and v virtual stages per rank of every row (t × p × DP = N). */
  @property({ type: Number }) pp = 1;
  @property({ type: Number }) vpp = 1;
  /** Kernel switches of every row (kernel-options.ts); a GPU that lacks one (fp8, FlashAttention on V100) says so per row. */
  @property({ attribute: false }) layerArch: LayerArch = defaultKernelOptions.layerArch;
  @property() attn: AttentionBackend = defaultKernelOptions.attentionBackend;
  @property() fp8: Fp8Format = defaultKernelOptions.fp8;
  @property() graphs: CudaGraphImpl = defaultKernelOptions.cudaGraphImpl;
  /** --cuda-graph-modules of every row with the graphs (empty: the whole layer). */
  @property({ attribute: false }) gscope: readonly CudaGraphModule[] = [];
  @property() fp8recipe: Fp8Recipe = defaultFp8Recipe;
  @property() fp4: Fp4Format = 'none';
  /** --cross-entropy: the loss's kernels (plan, megatron, megatron-fused = --cross-entropy-loss-fusion, te-fused). */
  @property() ce: CrossEntropyKernels = 'plan';
  /**
   * The page's chunked TP overlap (1 = off): when on, the SP rows are priced with Megatron's
   * --tp-comm-overlap (kernel-options.ts tpCommOverlap); the rows without SP cannot have it.
   */
  @property({ type: Number }) tpOverlapChunks = 1;
  /** cp, recompute, the distributed optimizer, the gradient and parameter overlaps and FSDP of every row (cluster-flags.ts). */
  @property({ attribute: false }) flags: ClusterFlags = {};
  /** The cluster model (cluster-model.ts): sizes, L, MoE and MLA as the CLI has them; absent: `config`'s sizes over `layers`. */
  @property({ attribute: false }) model: ClusterModelSpec | undefined;
  /** Why the cluster model cannot be read (a pasted config this tab lacks, a config the projection cannot price). */
  @property() modelError = '';
  @state() private plain: BudgetLine[] = [];
  @state() private sp: BudgetLine[] = [];
  /** The projected rows (with their steps), for the pipeline schedule. */
  @state() private rows: { plain: BudgetRow[]; sp: BudgetRow[] } = { plain: [], sp: [] };
  @state() private error = '';
  @state() private spec: SystemSpec | undefined;
  /** The projected step whose memory over time is drawn (no SP, at the page's t when legal), and its lanes. */
  @state() private memoryStep: StepProjection | undefined;
  @state() private memoryLanes: readonly MemoryLane[] = [];
  /** A projection is under way (the table and charts show the previous one, or nothing yet). */
  @state() private projecting = false;
  private readonly projections = new LatestWins();
  /** The config's model sizes (JSON) the last projection was asked for. */
  private projectedSizes: string | undefined;
  /** The flags (JSON) the last projection was asked for: a new object arrives on every render of the page. */
  private projectedFlags: string | undefined;

  protected override willUpdate(changed: PropertyValues<this>): void {
    // The projection covers every degree of the budget, so the page's own t only picks the row
    // whose memory is drawn; the config arrives as a new object on every render of the page
    // (4–5 times per TP change), so its sizes are compared by value.
    const sizes = this.config && JSON.stringify(modelSizesOf(this.config));
    const flags = JSON.stringify([this.flags, this.model && clusterModelSetup(this.model), this.modelError]);
    const resized = sizes !== this.projectedSizes || flags !== this.projectedFlags;
    this.projectedSizes = sizes;
    this.projectedFlags = flags;
    const inputs = [
      'system',
      'dtype',
      'layers',
      'dp',
      'm',
      'overlap',
      'pp',
      'vpp',
      'layerArch',
      'attn',
      'fp8',
      'fp8recipe',
      'fp4',
      'graphs',
      'ce',
      'gscope',
      'tpOverlapChunks',
    ] as const;
    if (resized || inputs.some((k) => changed.has(k))) void this.project();
    else if (changed.has('config')) this.pickMemoryStep();
  }

  /** The memory drawn: the projected row at the page's t (else the first that fits). */
  private pickMemoryStep(): void {
    const ok = this.rows.plain.filter((r): r is Extract<BudgetRow, { ok: true }> => r.ok);
    this.memoryStep = (ok.find((r) => r.tp === this.config?.tp) ?? ok[0])?.step;
    this.memoryLanes = this.memoryStep ? stageMemoryLanes(this.memoryStep.stageMemory, this.memoryStep.stepMs) : [];
  }

  private async project(): Promise<void> {
    const c = this.config;
    if (!c) return;
    const model = this.model;
    const modelError = this.modelError;
    this.projecting = true;
    await this.projections.run({
      work: async (req) => {
        // Some 7 step projections (each two plans and a schedule): after the page's first frame, not before it.
        await afterNextPaint();
        req.signal.throwIfAborted();
        if (modelError) throw new Error(modelError);
        const system = systemOf(this.system);
        const kernels = kernelOptionsOf(this);
        const machine = { system, dtype: this.dtype, kernels };
        const sizes = modelSizesOf(c);
        const pcp = this.pp * (this.flags.cp ?? 1);
        const setup = {
          sizes,
          layers: this.layers,
          // A config's model: its L, MoE (with the page's EP and ETP) and MLA, as --hf-config fills them.
          ...(model && clusterModelSetup(model)),
          sp: false,
          globalBatch: c.b * this.dp * this.m,
          overlap: this.overlap,
          pp: this.pp,
          vpp: this.vpp,
          ...this.flags,
          // One switch, two effects (as npm run project has it): FlashAttention's time and no s×s activations.
          flashAttention: usesFlashAttention(kernels, system.gpu.arch),
        };
        // Each row on its own N = t·p·cp·d GPUs.
        const rowsOf = async (ts: readonly number[], s: typeof setup, mc: typeof machine) =>
          (await Promise.all(ts.map((t) => fixedBudget({ ...s, gpus: t * pcp * this.dp }, [t], mc)))).flat();
        const plain = await rowsOf(clusterDegrees, setup, machine);
        // --tp-comm-overlap needs SP and t > 1 (Megatron asserts it): only the SP rows, all at t > 1, get it.
        const sp = await rowsOf(
          clusterDegrees.filter((t) => t > 1),
          { ...setup, sp: true },
          { ...machine, kernels: { ...kernels, tpCommOverlap: this.tpOverlapChunks > 1 } },
        );
        return { system, plain, sp };
      },
      done: ({ system, plain, sp }) => {
        this.spec = system;
        this.plain = budgetLines(plain);
        this.sp = budgetLines(sp, plain);
        this.rows = { plain, sp };
        this.pickMemoryStep();
        this.error = '';
      },
      failed: (e) => {
        this.error = e instanceof Error ? e.message : String(e);
        this.plain = [];
        this.sp = [];
        this.rows = { plain: [], sp: [] };
        this.memoryStep = undefined;
        this.memoryLanes = [];
      },
      settled: () => (this.projecting = false),
    });
  }

  protected override updated(): void {
    const ok = (ls: BudgetLine[]): Okay[] => ls.filter((l): l is Okay => l.ok);
    const plain = ok(this.plain);
    const sp = ok(this.sp);
    if (!plain.length || !this.spec) return;
    const degrees = [...new Set([...plain, ...sp].map((l) => l.tp))].sort((a, b) => a - b);
    const series = (v: (l: Okay) => number): ChartSeries[] => [
      { name: 'no SP', color: colors.plain, points: plain.map((l) => ({ t: l.tp, v: v(l) })) },
      { name: 'SP', color: colors.sp, points: sp.map((l) => ({ t: l.tp, v: v(l) })) },
    ];
    const draw = (name: string, title: string, yLabel: string, s: ChartSeries[], logY = false): void => {
      const svg = this.renderRoot.querySelector<SVGSVGElement>(`svg[data-chart="${name}"]`);
      if (svg) drawLineChart(svg, { title, yLabel, degrees, series: s, logY });
    };
    draw(
      'tokens',
      'tokens/s for the whole budget',
      'tokens/s',
      series((l) => l.tokensPerS),
    );
    draw(
      'mfu',
      'MFU (model FLOPs / N·peak·step)',
      'MFU %',
      series((l) => 100 * l.mfu),
    );
    draw(
      'exposed',
      'exposed communication, share of the step',
      '% of step',
      series((l) => 100 * l.exposedShare),
    );
    const capacity = plain[0]!.capacityGiB;
    draw(
      'memory',
      'memory per GPU (log) and capacity',
      'GiB',
      [
        ...series((l) => l.memoryGiB),
        {
          name: `capacity ${capacity} GiB (OOM above)`,
          color: colors.capacity,
          dashed: true,
          points: degrees.map((t) => ({ t, v: capacity })),
        },
      ],
      true,
    );
  }

  private row(l: BudgetLine, sp: boolean) {
    if (!l.ok)
      return html`<tr data-tp=${l.tp} data-sp=${String(sp)}>
        <td>${l.tp}</td>
        <td colspan="9">${l.reason}</td>
      </tr>`;
    const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
    const signed = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}%`;
    return html`<tr data-tp=${l.tp} data-sp=${String(sp)} data-oom=${String(l.oom)}>
      <td>${l.tp}${sp ? ' SP' : ''}</td>
      <td>${l.dp}</td>
      <td>${l.microBatches}</td>
      <td>${formatMs(l.stepMs)}</td>
      <td data-tokens=${l.tokensPerS}>${Math.round(l.tokensPerS).toLocaleString('en-US')}</td>
      <td>${l.tflopsPerGpu.toPrecision(3)}</td>
      <td title=${`against the training dtype's peak: ${pct(l.trainDtypeMfu)}`}>${pct(l.mfu)}</td>
      <td data-exposed-ms=${l.exposedMs} data-exposed-tp-ms=${l.exposedByGroup.tp}>
        ${formatMs(l.exposedMs)} (${pct(l.exposedShare)})
      </td>
      <td class=${l.oom ? 'oom' : ''} data-memory-bytes=${l.memoryGiB * 2 ** 30}>
        ${formatBytes(l.memoryGiB * 2 ** 30)}${l.oom ? ` — OOM (> ${l.capacityGiB} GiB)` : ''}
      </td>
      <td>${l.vsNoSp ? `${signed(l.vsNoSp.throughput)} tok/s, ${signed(l.vsNoSp.memory)} mem` : '—'}</td>
    </tr>`;
  }

  /** The cluster model's MoE and MLA as Megatron's flags (every row has the same EP and ETP), or nothing for a dense model. */
  private modelWords() {
    const moe = this.model?.moe;
    const mla = this.model?.mla;
    if (!moe && !mla) return nothing;
    const dense = Array.isArray(moe?.layerFreq)
      ? (moe.layerFreq as readonly number[]).filter((x) => x === 0).length
      : 0;
    return html`<span data-cluster-moe=${moe ? `${moe.experts}:${moe.topk}:${moe.ep}:${moe.etp ?? 't'}` : nothing}
      >${
        moe
          ? `, a mixture of experts: ${clusterMoeWords(moe)}${dense ? ` (the first ${dense} layers dense)` : ''}, EP ${moe.ep} and ETP ${moe.etp ?? 't'} on every row (the page's ep and etp; rows without SP at t > 1 are Megatron's refusal)`
          : ''
      }${mla ? `, multi-latent attention (--kv-lora-rank ${mla.kvLoraRank}${mla.qLoraRank !== undefined ? ` --q-lora-rank ${mla.qLoraRank}` : ''})` : ''}</span
    >`;
  }

  /** The kernel switches that differ from the projection's defaults, as Megatron's flags, or nothing. */
  private kernelWords(): string {
    const d = defaultKernelOptions;
    const flags = [
      this.layerArch !== d.layerArch ? `--arch ${this.layerArch}` : '',
      this.attn !== d.attentionBackend ? `--attention-backend ${this.attn}` : '',
      this.fp8 !== d.fp8 ? `--fp8-format ${this.fp8}` : '',
      this.fp8 !== d.fp8 && this.fp8recipe !== defaultFp8Recipe ? `--fp8-recipe ${this.fp8recipe}` : '',
      this.fp4 !== 'none' ? `--fp4-format ${this.fp4}` : '',
      this.graphs !== 'none' ? cudaGraphFlags(this.graphs, this.gscope).join(' ') : '',
      this.ce !== 'plan' ? `--cross-entropy ${this.ce}` : '',
    ].filter(Boolean);
    return flags.length ? `kernels ${flags.join(' ')};` : '';
  }

  /** The data-parallel and memory flags of every row, as Megatron's flags with the environment they need (cluster-flags.ts), or DDP's default in words. */
  private flagWords(): string {
    const f = this.flags;
    const { env, flags } = clusterLaunchOf(f, this.fp8recipe);
    const vars = Object.entries(env).map(([k, v]) => `${k}=${v}`);
    const grads = f.fsdp
      ? 'gradients synced as the FSDP strategy has it'
      : f.overlapGradReduce
        ? 'gradient buckets reduced during backward'
        : 'DP gradients all-reduced in one bucket after backward (no --overlap-grad-reduce)';
    return `${vars.length ? `env ${vars.join(' ')}; ` : ''}${flags.length ? `flags ${flags.join(' ')}; ` : ''}${grads}`;
  }

  /** The step whose pipeline is drawn: the page's t (with SP if the page has it), else the first row that runs. */
  private pipelineStep(): StepProjection | undefined {
    const t = this.settings?.tp;
    const rows = this.settings?.sp ? [...this.rows.sp, ...this.rows.plain] : this.rows.plain;
    const ok = rows.filter((r): r is Extract<BudgetRow, { ok: true }> => r.ok);
    return (ok.find((r) => r.tp === t) ?? ok[0])?.step;
  }

  protected override render() {
    const c = this.config;
    if (!c) return nothing;
    const s = this.spec;
    const page = this.settings;
    const model = page?.cmodel ?? 'layer';
    const other = model === 'layer' ? 'seeds-v100' : 'layer';
    const layers = this.model?.layers ?? this.layers;
    return html`<h2>Cluster projection</h2>
      ${this.projecting && !this.plain.length ? html`<p class="note" data-cluster-projecting>projecting onto the cluster…</p>` : nothing}
      ${this.error ? html`<p class="error" role="alert" data-cluster-error>${this.error}</p>` : nothing}
      ${
        page
          ? html`<p class="note" data-cluster-model=${model}>
              Model: ${clusterModelName(model)}.
              <button
                type="button"
                data-cluster-model-switch=${other}
                @click=${() => this.dispatchEvent(settingsChangeEvent({ ...page, cmodel: other }, 'cmodel'))}
              >
                use ${clusterModelName(other)}
              </button>
            </p>`
          : nothing
      }
      <p class="note" data-cluster-caption>
        ${model === 'layer' ? 'This layer' : 'The model'} (h ${c.h}, ${c.heads} heads, s ${c.s}, b ${c.b})
        × ${layers} layers (embedding, output and loss once${this.model && model !== 'layer' ? `; ${this.model.from}` : ''})${this.modelWords()}
        on ${s ? `${s.label}, t × p × cp × d GPUs` : this.system}, in ${this.dtype};
        ${this.kernelWords()} the mesh's layout:
        ${this.pp > 1 ? `p = ${this.pp} pipeline stages${this.vpp > 1 ? ` × v = ${this.vpp} virtual stages` : ''},` : ''}
        d = ${this.dp} replicas of m = ${this.m} micro-batches (dp, m), global batch b·d·m = ${c.b * this.dp * this.m} sequences;
        <span data-cluster-flags>${this.flagWords()}</span>. A projection from datasheet figures and the alpha-beta
        link model, not a measurement; the WebGPU run on this page is fp32 on this browser's adapter.
      </p>
      ${
        this.tpOverlapChunks > 1
          ? html`<p class="note" data-cluster-tp-overlap>
              tpoverlap=chunks:${this.tpOverlapChunks}: the SP rows are priced with Megatron's --tp-comm-overlap
              (all-gathers and reduce-scatters in chunks under their GEMMs, the SMs they take slowing the GEMMs); the
              rows without SP cannot have it, as Megatron asserts --sequence-parallel with it.
            </p>`
          : nothing
      }
      <table data-cluster-table>
        <thead>
          <tr>
            <th>t</th>
            <th>DP</th>
            <th>m</th>
            <th>step</th>
            <th>tokens/s</th>
            <th>TFLOP/s/GPU</th>
            <th>MFU</th>
            <th>exposed comm</th>
            <th>memory/GPU</th>
            <th>SP vs no SP</th>
          </tr>
        </thead>
        <tbody>
          ${this.plain.map((l) => this.row(l, false))} ${this.sp.map((l) => this.row(l, true))}
        </tbody>
      </table>
      <div class="charts">
        <svg data-chart="tokens"></svg><svg data-chart="mfu"></svg><svg data-chart="exposed"></svg
        ><svg data-chart="memory"></svg>
      </div>
      ${
        this.pp > 1
          ? html`<tp-pipeline-view .step=${this.pipelineStep()}></tp-pipeline-view>`
          : html`<p class="note" data-pipeline-hint>
              Pipeline parallelism: set p ≥ 2 in the machine controls to see the schedule.
            </p>`
      }
      ${this.memoryStep ? this.memoryOverStep(this.memoryStep) : nothing}`;
  }

  private memoryOverStep(p: StepProjection) {
    const d = p.degrees;
    return html`<tp-live-memory
      data-cluster-memory
      heading=${`Memory over one step at t = ${d.tp}, DP ${p.dp}, p ${d.pp}, m ${p.microBatches} (no SP), per pipeline stage`}
      caption="The projection's lifetime model: resident weights and optimizer state, the gradient buffer for the step, each micro-batch's activations from its forward to its backward (with p > 1, 1F1B keeps several in flight), transients. The ranks' classes above map onto these: weights and optimizer state → resident, gradients → per step, activations kept for backward → per micro-batch, workspace and staging → transient."
      .lanes=${this.memoryLanes}
      .classes=${lifetimeClassViews}
    ></tp-live-memory>`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-cluster-panel': TpClusterPanel;
  }
}
