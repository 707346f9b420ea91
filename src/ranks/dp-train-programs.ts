import type { Collectives } from '../comm/collectives.ts';
import { numel } from '../core/shape.ts';
import type { DpSyncInfo } from '../core/trace-event.ts';
import { adamStep } from '../kernels/adam.ts';
import { importGemmChoices } from '../kernels/gemm-choice.ts';
import { readTensor, type GpuTensor } from '../kernels/tensor.ts';
import {
  bucketShard,
  flattenParams,
  gradBufferLayout,
  type GradBucket,
  type GradBufferLayout,
  type ParamRange,
} from '../mesh/grad-buckets.ts';
import { opSpec } from '../parallel/backend.ts';
import { checkDpOptions, type DpOptions } from '../parallel/dp-options.ts';
import type { LayerConfig } from '../parallel/config.ts';
import { LayerComm } from '../parallel/layer-comm.ts';
import { layerStep, type StepInputs } from '../parallel/layer.ts';
import { rankOwnership } from '../parallel/ownership.ts';
import { rankWeightArrays, uploadWeights } from '../parallel/step-data.ts';
import { registrationOrder, type WeightName } from '../parallel/weight-names.ts';
import type { WeightSet } from '../parallel/weights.ts';
import { defaultBucketSize } from '../projection/links/data-parallel.ts';
import { adamHyper } from '../reference/adam.ts';
import { copyColsKernel } from '../reference/copy-cols.ts';
import { scaleKernel } from '../reference/scale.ts';
import { GpuBackend } from './backend-gpu.ts';
import type { RankContext } from './context.ts';
import { GroupTurns } from './group-turns.ts';
import { kernelContext, type GemmChoices } from './layer-programs.ts';
import { adoptInto, ResultTensors } from './result-tensors.ts';

/** One bucket on this rank: its full gradient and parameter buffers and, with the distributed optimizer, its shard. */
interface BucketTensors {
  readonly grad: GpuTensor;
  readonly param: GpuTensor;
  /** This rank's shard (distributed optimizer): [start, end) of the buffer, its reduced gradients and its fp32 main parameters. */
  readonly shard?: {
    readonly start: number;
    readonly end: number;
    readonly grad: GpuTensor;
    readonly param: GpuTensor;
  };
  /** Adam's moments over what this rank steps: the shard, or the whole bucket. */
  readonly m: GpuTensor;
  readonly v: GpuTensor;
}

interface DpSession {
  readonly config: LayerConfig;
  readonly opts: DpOptions;
  readonly dp: number;
  readonly layout: GradBufferLayout<WeightName>;
  readonly buckets: readonly BucketTensors[];
  readonly w: WeightSet<GpuTensor>;
  readonly store: GpuBackend;
  readonly tp: Collectives<GpuTensor>;
  readonly dpComm: Collectives<GpuTensor, GpuTensor>;
  readonly results: ResultTensors;
  step: number;
}

const sessions = new Map<string, DpSession>();

/** What dpTrainStart reports: the buffer's layout (every rank of a DP group has the same). */
export interface DpStartReply {
  readonly dp: number;
  readonly numel: number;
  readonly buckets: readonly GradBucket<WeightName>[];
  readonly params: readonly ParamRange<WeightName>[];
}

/**
 * Starts data-parallel training run `id` on this rank of a mesh: the TP layer of `config` on this
 * rank's TP group, replicated over its DP group of d ranks. Uploads its weight shards, lays out
 * their gradient buffer (src/mesh/grad-buckets.ts) and, per bucket, the parameter buffer and
 * Adam's moments — over the rank's 1/d shard with the distributed optimizer. Everything is fp32,
 * so the "fp32 main parameters" Megatron keeps beside bf16 weights are here the parameter buffer
 * itself (as Megatron does for fp32 parameters: shard_fp32_groups views the model's own).
 */
export function dpTrainStart(
  ctx: RankContext,
  a: { id: string; config: LayerConfig; dp: DpOptions; choices?: GemmChoices },
): DpStartReply {
  dpTrainEnd(ctx, { id: a.id });
  if (a.choices) importGemmChoices(ctx.device, a.choices);
  const c = a.config;
  if (ctx.gpuComm.size !== c.tp)
    throw new Error(`dpTrainStart: the TP group has ${ctx.gpuComm.size} ranks but the config asks for t = ${c.tp}.`);
  checkDpOptions(a.dp);
  if (c.vocab <= 0)
    throw new Error(
      'dpTrainStart: the layer needs a vocabulary (vocab > 0): each replica trains on its own batch of tokens.',
    );
  const dpGroup = ctx.mesh.group('dp');
  const d = dpGroup.gpuComm.size;
  const distopt = a.dp.mode === 'distributed-optimizer';
  const shards = rankWeightArrays(c, rankOwnership(c)[ctx.rank]);
  const names = registrationOrder.filter((n) => shards[n] !== undefined);
  const layout = gradBufferLayout(
    names.map((n) => ({ name: n, numel: numel(shards[n]!.shape) })),
    a.dp.overlap ? (a.dp.bucketSize ?? defaultBucketSize(d)) : undefined,
    d,
    distopt,
  );
  const flat = flattenParams(
    layout,
    Object.fromEntries(names.map((n) => [n, shards[n]!.data])) as Record<WeightName, Float32Array>,
  );
  const store = new GpuBackend(kernelContext(ctx.device));
  const buckets = layout.buckets.map((b, i): BucketTensors => {
    const size = b.end - b.start;
    const grad = store.tensor(`dp.grad.${i}`, [size]);
    const param = store.tensor(`dp.param.${i}`, [size], flat.subarray(b.start, b.end));
    if (!distopt)
      return { grad, param, m: store.tensor(`dp.adam.m.${i}`, [size]), v: store.tensor(`dp.adam.v.${i}`, [size]) };
    const s = bucketShard(layout, i, ctx.mesh.coords.dp);
    const n = s.end - s.start;
    return {
      grad,
      param,
      shard: {
        ...s,
        grad: store.tensor(`dp.grad.shard.${i}`, [n]),
        param: store.tensor(`dp.param.shard.${i}`, [n], flat.subarray(s.start, s.end)),
      },
      m: store.tensor(`dp.adam.m.${i}`, [n]),
      v: store.tensor(`dp.adam.v.${i}`, [n]),
    };
  });
  const turns = new GroupTurns();
  const results = new ResultTensors();
  sessions.set(a.id, {
    config: c,
    opts: a.dp,
    dp: d,
    layout,
    buckets,
    w: uploadWeights(shards, (n, shape, data) => store.tensor(n, shape, data)),
    store,
    tp: results.around(turns.around('tp', ctx.gpuComm)),
    dpComm: turns.around('dp', dpGroup.gpuComm),
    results,
    step: 0,
  });
  return { dp: d, numel: layout.numel, buckets: layout.buckets, params: layout.params };
}

/** A stretch of the gradient buffer as this rank holds it after the sync: [start, start + data.length). */
export interface BufferPiece {
  readonly start: number;
  readonly data: Float32Array;
}

/** One step's reply: this replica's mean loss; with `read`, the weights after the update and the synced gradients this rank holds. */
export interface DpStepReply {
  readonly loss: number;
  /** This rank's weight shards after the update, by name. */
  readonly weights?: Partial<Record<WeightName, Float32Array>>;
  /** The averaged gradients the optimizer used: whole buckets (all-reduce) or this rank's shards (distributed optimizer). */
  readonly grads?: readonly BufferPiece[];
  /** Adam's moments after the update, over the same pieces as `grads`. */
  readonly moments?: readonly { readonly start: number; readonly m: Float32Array; readonly v: Float32Array }[];
}

/** The collective names of a step's syncs (equal on every rank of the DP group: part of the fingerprint). */
const gradSyncName = (i: number) => `dp.grads.${i}`;
const paramSyncName = (i: number) => `dp.params.${i}`;

/**
 * One data-parallel step of run `id` on this replica's micro-batch `inputs`: the TP layer's forward
 * and backward; each gradient copied into its place of the buffer as backward finishes it (the
 * backward post-hook's main_grad.add_ on a zeroed buffer), a bucket scaled by 1/d and summed over
 * the DP group — in the overlapped mode as soon as its last gradient is copied, else all after
 * backward; then Adam (lr, β1 0.9, β2 0.999, ε 1e-8) on the bucket, or on this rank's shard
 * followed by the all-gather of the updated parameters; the parameters copied back into the
 * layer's weights. The syncs' collectives carry `dpSync` in the trace.
 */
export async function dpTrainStep(
  ctx: RankContext,
  a: { id: string; inputs: StepInputs; lr: number; read?: boolean },
): Promise<DpStepReply> {
  const run = sessions.get(a.id);
  if (!run)
    throw new Error(`dpTrainStep: no data-parallel run "${a.id}" on rank ${ctx.mesh.rank}; call dpTrainStart first.`);
  const { config: c, layout, buckets, opts } = run;
  const step = ++run.step;
  const k = kernelContext(ctx.device);
  const be = new GpuBackend(k, run.results.backendOptions());
  const lc = new LayerComm(
    run.tp,
    (t: GpuTensor) => t.shape,
    () => k.flush(),
    adoptInto(be, run.results),
  );
  const traceFrom = ctx.trace.peek().length;
  const tags = new Map<string, DpSyncInfo>();
  let gradsDone = 0;
  const tag = (name: string, sync: DpSyncInfo['sync'], i: number): string => {
    const b = layout.buckets[i]!;
    tags.set(name, {
      sync,
      bucket: i,
      buckets: buckets.length,
      params: b.params,
      numel: b.end - b.start,
      overlapped: opts.overlap,
      gradsToCome: sync === 'param-all-gather' ? 0 : layout.params.length - gradsDone,
      step,
    });
    return name;
  };
  const rangeOf = new Map(layout.params.map((p) => [p.name, p]));
  const ready = buckets.map(() => 0);
  const syncs: Promise<GpuTensor>[] = [];
  // Megatron's start_grad_sync for one bucket: grad_data *= 1/d, then sum over the DP group.
  const syncGrads = (i: number): void => {
    const b = buckets[i]!;
    be.kernel(opSpec(`dp.grads.scale.${i}`, 'replicated', { role: 'wgrad' }), scaleKernel, [b.grad], {
      factor: 1 / run.dp,
    });
    k.submit();
    syncs[i] = b.shard
      ? run.dpComm.reduceScatter(b.grad, 0, 'sum', tag(gradSyncName(i), 'grad-reduce-scatter', i), b.shard.grad)
      : run.dpComm.allReduce(b.grad, 'sum', tag(gradSyncName(i), 'grad-all-reduce', i), b.grad);
  };
  try {
    const r = await layerStep(be, lc, c, rankOwnership(c)[ctx.rank], run.w, a.inputs, {
      gradReady: (name, g) => {
        const p = rangeOf.get(name)!;
        const b = layout.buckets[p.bucket]!;
        const n = p.end - p.start;
        be.kernel(
          opSpec(`dp.grads.copy.${name}`, 'replicated', { role: 'wgrad', weight: name }),
          copyColsKernel,
          [g, buckets[p.bucket]!.grad],
          { rows: 1, n, from: { w: n, c0: 0 }, to: { w: b.end - b.start, c0: p.start - b.start } },
        );
        gradsDone++;
        if (opts.overlap && ++ready[p.bucket] === b.params.length) syncGrads(p.bucket);
      },
    });
    if (!opts.overlap) {
      await k.flush();
      buckets.forEach((_, i) => syncGrads(i));
    }
    await Promise.all(syncs);
    // The optimizer step: Adam on the whole bucket (every replica alike), or on this rank's shard.
    const h = adamHyper(a.lr);
    for (const b of buckets)
      if (b.shard) adamStep(k, b.shard.param, b.shard.grad, b.m, b.v, h, step);
      else adamStep(k, b.param, b.grad, b.m, b.v, h, step);
    if (buckets.some((b) => b.shard)) {
      // Megatron's start_param_sync: all-gather every bucket's updated shards into its parameter buffer.
      await k.flush();
      await Promise.all(
        buckets.map((b, i) =>
          run.dpComm.allGather(b.shard!.param, 0, tag(paramSyncName(i), 'param-all-gather', i), b.param),
        ),
      );
    }
    // The layer's weights are views of the parameter buffer in Megatron; here they are copied back.
    for (const p of layout.params) {
      const b = layout.buckets[p.bucket]!;
      const n = p.end - p.start;
      be.kernel(
        opSpec(`dp.params.copy.${p.name}`, 'replicated', { weight: p.name }),
        copyColsKernel,
        [buckets[p.bucket]!.param, run.w[p.name]!],
        { rows: 1, n, from: { w: b.end - b.start, c0: p.start - b.start }, to: { w: n, c0: 0 } },
      );
    }
    const loss = await be.read(r.loss!);
    await k.flush();
    ctx.trace.annotate(traceFrom, (e) => {
      const t = e.stream === 'comm' && e.comm?.tensor !== undefined ? tags.get(e.comm.tensor) : undefined;
      return t ? { ...e, dpSync: t } : e;
    });
    if (!a.read) return { loss: loss.reduce((s, x) => s + x, 0) / loss.length };
    const weights: Partial<Record<WeightName, Float32Array>> = {};
    for (const p of layout.params) weights[p.name] = await readTensor(ctx.device, run.w[p.name]!);
    const grads: BufferPiece[] = [];
    const moments: { start: number; m: Float32Array; v: Float32Array }[] = [];
    for (const [i, b] of buckets.entries()) {
      const start = b.shard ? b.shard.start : layout.buckets[i]!.start;
      grads.push({ start, data: await readTensor(ctx.device, b.shard ? b.shard.grad : b.grad) });
      moments.push({ start, m: await readTensor(ctx.device, b.m), v: await readTensor(ctx.device, b.v) });
    }
    return { loss: loss.reduce((s, x) => s + x, 0) / loss.length, weights, grads, moments };
  } finally {
    be.releaseAll();
    run.results.endStep();
  }
}

/** Ends data-parallel run `id` on this rank and frees its tensors (nothing when there is none). */
export function dpTrainEnd(_ctx: RankContext, a: { id: string }): void {
  const run = sessions.get(a.id);
  run?.store.releaseAll();
  run?.results.dispose();
  sessions.delete(a.id);
}

/** Data parallel's programs, served by src/ranks/layer.worker.ts. */
export const dpTrainPrograms = { dpTrainStart, dpTrainStep, dpTrainEnd };
