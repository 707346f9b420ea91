import type { TrainDtype } from '../../hardware/dtype.ts';
import { dtypeBytes } from '../../hardware/dtype.ts';
import type { SystemSpec } from '../../hardware/systems.ts';
import type { ActivationOffload, OffloadModule } from '../../megatron/activation-offload.ts';
import { headDim } from '../../parallel/config.ts';
import type { LayerPlan } from '../../parallel/plan-types.ts';
import type { MoeStepModel } from './moe-step.ts';

/** One tensor a module offloads: its module, elements and bytes. */
export interface OffloadTensor {
  readonly module: OffloadModule;
  readonly elements: number;
  readonly bytes: number;
}

/**
 * The inputs each offloadable module saves for backward, per layer and micro-batch on one rank (the
 * activation table's terms, accounting/activations.ts): attn_norm the layer input [s/t or s, b, h]
 * and mlp_norm the pre-MLP norm's input — none under SP, where the norms are fused into the linear
 * after them (IdentityOp: the guide's "Skipped if using IdentityOp"); qkv_linear QKV's input
 * [s/t or s, b, h]; core_attn Q [s, b, n_q, d], K and V [s, b, n_kv, d] (K and V repeated to the
 * query heads without flash attention, dot_product_attention.py:169-175); attn_proj the context
 * [s, b, n_q·d]. In a MoE layer (moe-step.ts, r routed rows after the ETP gather): expert_fc1 the
 * experts' input [r, h], moe_act fc1's output [r, g·F_e/ETP] (g = 2 with SwiGLU).
 */
export function offloadTensors(
  block: LayerPlan,
  dtype: TrainDtype,
  flash: boolean,
  moe: MoeStepModel | undefined,
): { readonly dense: readonly OffloadTensor[]; readonly moe: readonly OffloadTensor[] } {
  const c = block.config;
  const own = block.ranks[0]!;
  const b = dtypeBytes[dtype];
  const sl = own.tokens[1] - own.tokens[0];
  const nq = own.heads[1] - own.heads[0];
  const nkv = flash ? own.kvGroups.length : nq;
  const d = headDim(c);
  const t = (module: OffloadModule, elements: number): OffloadTensor => ({ module, elements, bytes: elements * b });
  const fused = c.sp && c.tp > 1;
  const dense = [
    ...(fused ? [] : [t('attn_norm', sl * c.b * c.h)]),
    t('qkv_linear', sl * c.b * c.h),
    t('core_attn', c.s * c.b * nq * d),
    t('core_attn', c.s * c.b * nkv * d),
    t('core_attn', c.s * c.b * nkv * d),
    t('attn_proj', c.s * c.b * nq * d),
    ...(fused ? [] : [t('mlp_norm', sl * c.b * c.h)]),
  ];
  if (!moe) return { dense, moe: [] };
  const r = moe.compute.rows.computed;
  const f = moe.shapes.ffn / moe.shapes.etp;
  const g = moe.shapes.gated ? 2 : 1;
  return { dense, moe: [t('expert_fc1', r * moe.shapes.hidden), t('moe_act', r * g * f)] };
}

/** One offload group: what one module saves in one layer (Megatron's OffloadTensorGroup), its bytes at or above the minimum size. */
export interface OffloadGroup {
  readonly module: OffloadModule;
  readonly bytes: number;
}

/**
 * A layer's offload groups of the listed modules in forward order: each module's tensors of at
 * least min_offloaded_tensor_size elements (tensor_need_offloading_checker, fine_grained_activation_offload.py:986-1000)
 * summed into its group (update_offload_info :394-397). Groups left with no bytes are never
 * eligible (post_warmup_callback :609-612) and are dropped.
 */
export function offloadGroups(tensors: readonly OffloadTensor[], o: ActivationOffload): OffloadGroup[] {
  const on = new Set(o.modules);
  const out: OffloadGroup[] = [];
  for (const x of tensors) {
    if (!on.has(x.module) || x.elements < o.minTensorElements) continue;
    const last = out.at(-1);
    if (last?.module === x.module) out[out.length - 1] = { module: x.module, bytes: last.bytes + x.bytes };
    else out.push({ module: x.module, bytes: x.bytes });
  }
  return out;
}

/** The pass a group's copy hides under: its layer's (dense groups) or its MoE layer's MoE part (expert groups). */
export interface OffloadPassTimes {
  readonly dense: { readonly forwardMs: number; readonly backwardMs: number };
  readonly moe: { readonly forwardMs: number; readonly backwardMs: number };
}

/** What one pipeline rank offloads, per chunk of its micro-batches. */
export interface StageOffload {
  /** Bytes chunk `chunk` of micro-batch `microBatch` keeps on the host between its forward and backward. */
  readonly offloadedBytes: (chunk: number, microBatch: number) => number;
  /** The most any micro-batch of a chunk offloads (what a lower bound of the peak may assume). */
  readonly maxOffloadedBytes: readonly number[];
  /** One layer's offloaded bytes back on the GPU while its backward runs, the largest, per chunk. */
  readonly reloadBytes: readonly number[];
  /** Exposed copy time per chunk pass, the mean over the step's micro-batches, ms. */
  readonly exposedForwardMs: readonly number[];
  readonly exposedBackwardMs: readonly number[];
}

/** One stage's layout: its rank, the pipeline's size and micro-batches, layers and MoE layers per chunk. */
export interface OffloadStage {
  readonly stage: number;
  readonly stages: number;
  readonly microBatches: number;
  readonly layers: readonly number[];
  readonly moeLayers: readonly number[];
}

/** One chunk's groups after the manager's rules: bytes offloaded, per layer (dense, MoE part), and the largest layer. */
interface ChunkPlan {
  readonly bytes: number;
  readonly exposedForwardMs: number;
  readonly exposedBackwardMs: number;
  readonly reloadBytes: number;
}

/**
 * The order in which a rank's chunks (virtual stage, micro-batch) run backward, as the manager
 * queues them (PipelineOffloadManager.flush and init_model_chunk_offload_handler,
 * fine_grained_activation_offload.py:537-550, :686-746): without virtual stages the micro-batches
 * in order; with v of them, in groups of p micro-batches (microbatch_group_size_per_vp_stage,
 * model_parallel_config.py:568), each group's last chunk first down to its first.
 */
function* backwardOrder(v: number, p: number, m: number): Generator<readonly [number, number]> {
  if (v === 1) {
    for (let mb = 0; mb < m; mb++) yield [0, mb];
    return;
  }
  for (let g = 0; g < m; g += p)
    for (let ch = v - 1; ch >= 0; ch--) for (let mb = g; mb < Math.min(m, g + p); mb++) yield [ch, mb];
}

/**
 * One rank's fine-grained offload (Megatron's PipelineOffloadManager after its warm-up iteration,
 * fine_grained_activation_offload.py, core_v0.19.0). A chunk's groups run in forward order, layer by
 * layer: each layer's dense groups, then its expert groups when it is a MoE layer (a chunk's MoE
 * layers taken as its last ones, as moe_layer_freq's dense-first patterns place them). Of every
 * chunk's groups, in this order (post_warmup_callback):
 *
 * - the last-group margin (:579-596): in the first chunk to run backward (micro-batch 0 of the last
 *   chunk), the last group of each module stays on the GPU, so its reload cannot stall the first
 *   backward (chunks taken to hold the same modules);
 * - --delta-offload-bytes-across-pp-ranks Δ (:597-607): pipeline rank i keeps i·Δ bytes on the
 *   GPU, whole groups in backward order of the chunks and forward order within each, the last one
 *   overshooting;
 * - the fraction f (:608-627): of each chunk's groups still eligible (n of them), the last
 *   ⌊n·(1 − f)⌋ stay;
 * - at run time (should_bulk_offload :1066-1087), a chunk whose backward comes next keeps the last
 *   group of each module: on the last pipeline rank (and without a pipeline) every micro-batch of
 *   the last chunk, whose forward its own backward follows.
 *
 * Each offloaded group moves its bytes over the host link (SystemSpec.host, per direction) on a side
 * stream, D2H in forward and H2D ahead of its backward; per layer, what its pass does not cover,
 * max(0, bytes/link − pass), is exposed (dense groups under the layer's pass, expert groups under
 * its MoE part's). Chunks differ by micro-batch (the margin, Δ); a chunk's exposed time is their
 * mean over the step's micro-batches.
 */
export function stageOffload(
  at: OffloadStage,
  groups: { readonly dense: readonly OffloadGroup[]; readonly moe: readonly OffloadGroup[] },
  o: ActivationOffload,
  system: SystemSpec,
  pass: OffloadPassTimes,
): StageOffload {
  const host = system.host;
  if (!host)
    throw new Error(
      `--fine-grained-activation-offloading: ${system.label} has no host link figure; choose a DGX or GB200 system.`,
    );
  const perMs = host.linkGBps * 1e6;
  const v = at.layers.length;
  const m = at.microBatches;
  const lastRank = at.stage === at.stages - 1;
  const keep = { left: at.stage * o.deltaBytesPerPpRank };
  const plan = (ch: number, margin: boolean, delta: boolean, runtime: boolean): ChunkPlan => {
    const n = at.layers[ch]!;
    const firstMoe = n - at.moeLayers[ch]!;
    const list: { layer: number; moe: boolean; module: OffloadModule; bytes: number; on: boolean }[] = [];
    for (let l = 0; l < n; l++) {
      for (const g of groups.dense) list.push({ layer: l, moe: false, ...g, on: true });
      if (l >= firstMoe) for (const g of groups.moe) list.push({ layer: l, moe: true, ...g, on: true });
    }
    const lastOfEach = (): void => {
      const seen = new Set<OffloadModule>();
      for (let j = list.length - 1; j >= 0; j--)
        if (!seen.has(list[j]!.module)) {
          seen.add(list[j]!.module);
          list[j]!.on = false;
        }
    };
    if (margin) lastOfEach();
    if (delta)
      for (const g of list)
        if (g.on && keep.left > 0) {
          keep.left -= g.bytes;
          g.on = false;
        }
    const eligible = list.filter((g) => g.on);
    let off = Math.trunc(eligible.length * (1 - o.fraction));
    for (let j = eligible.length - 1; j >= 0 && off > 0; j--, off--) eligible[j]!.on = false;
    if (runtime) lastOfEach();
    const dense = new Float64Array(n);
    const moe = new Float64Array(n);
    for (const g of list) if (g.on) (g.moe ? moe : dense)[g.layer] += g.bytes;
    let bytes = 0;
    let exposedForwardMs = 0;
    let exposedBackwardMs = 0;
    let reloadBytes = 0;
    for (let l = 0; l < n; l++) {
      bytes += dense[l]! + moe[l]!;
      reloadBytes = Math.max(reloadBytes, dense[l]! + moe[l]!);
      exposedForwardMs +=
        Math.max(0, dense[l]! / perMs - pass.dense.forwardMs) + Math.max(0, moe[l]! / perMs - pass.moe.forwardMs);
      exposedBackwardMs +=
        Math.max(0, dense[l]! / perMs - pass.dense.backwardMs) + Math.max(0, moe[l]! / perMs - pass.moe.backwardMs);
    }
    return { bytes, exposedForwardMs, exposedBackwardMs, reloadBytes };
  };
  // Every chunk of a micro-batch the margin, Δ and the run-time rule leave alone plans alike.
  const plain = at.layers.map((_, ch) => plan(ch, false, false, lastRank && ch === v - 1));
  const special = new Map<number, ChunkPlan>();
  let first = true;
  for (const [ch, mb] of backwardOrder(v, at.stages, m)) {
    if (!first && !(keep.left > 0)) break;
    special.set(ch * m + mb, plan(ch, first, true, lastRank && ch === v - 1));
    first = false;
  }
  const of = (ch: number, mb: number): ChunkPlan => special.get(ch * m + mb) ?? plain[ch]!;
  const perChunk = plain.map((p, ch) => {
    let f = p.exposedForwardMs * m;
    let b = p.exposedBackwardMs * m;
    let most = p.bytes;
    let reload = p.reloadBytes;
    for (const [key, s] of special)
      if (Math.floor(key / m) === ch) {
        f += s.exposedForwardMs - p.exposedForwardMs;
        b += s.exposedBackwardMs - p.exposedBackwardMs;
        most = Math.max(most, s.bytes);
        reload = Math.max(reload, s.reloadBytes);
      }
    return { f: f / m, b: b / m, most, reload };
  });
  return {
    offloadedBytes: (ch, mb) => of(ch, mb).bytes,
    maxOffloadedBytes: perChunk.map((x) => x.most),
    reloadBytes: perChunk.map((x) => x.reload),
    exposedForwardMs: perChunk.map((x) => x.f),
    exposedBackwardMs: perChunk.map((x) => x.b),
  };
}
