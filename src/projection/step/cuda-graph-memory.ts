// The memory CUDA graphs take beyond eager execution, per stage, read at Megatron-LM core_v0.19.0
// (megatron/core/transformer/cuda_graphs.py, full_cuda_graph.py, module.py, transformer_layer.py)
// and Transformer Engine v2.10 (transformer_engine/pytorch/graph.py, `make_graphed_callables`).
//
// What does not move the peak: every impl captures its graphs into one mempool in the order they
// run (local: one `global_mempool` for every runner, cuda_graphs.py:1837-1838, :1904, :1924,
// created in execution order, :668-678; transformer_engine: one pool, captures in the schedule's
// `_order`, TE graph.py:336, :468-470; full_iteration: the whole forward-backward in one graph,
// full_cuda_graph.py:226-232). The activations saved for backward then live in the pool with the
// lifetimes the schedule gives them in eager mode, so the pool reaches the captured layers'
// activation peak, which the stage's eager peak already holds. What is added: static buffers.
import type { CudaGraphModule } from '../../megatron/cuda-graph-rules.ts';
import type { CudaGraphImpl } from '../layer/kernel-options.ts';
import { stageOrder } from '../pipeline/pipeline-schedule.ts';

/** The step's shape as the graphs see it: sequence s, micro-batch b, hidden h, degrees, micro-batches m. */
export interface GraphShape {
  readonly s: number;
  readonly b: number;
  readonly h: number;
  readonly t: number;
  readonly sp: boolean;
  readonly cp: number;
  readonly p: number;
  readonly v: number;
  readonly m: number;
  /** Bytes per element of the training dtype (local's static inputs take the eager input's dtype). */
  readonly dtypeBytes: number;
  /** --overlap-moe-expert-parallel-comm: transformer_engine captures in the layer-wise overlap order. */
  readonly overlapEpComm?: boolean;
  /**
   * --cuda-graph-modules (absent or empty: the whole layer). Priced partial scopes: attn and mlp
   * of dense layers, attn and moe where every layer is MoE (moe's static input as mlp's), under
   * transformer_engine, each layer graphed (cuda_graphs.py:2043-2083).
   */
  readonly scope?: readonly CudaGraphModule[];
}

/** What CUDA graphs add on one pipeline stage. */
export interface CudaGraphStage {
  readonly impl: Exclude<CudaGraphImpl, 'none'>;
  /** Graphs captured on the stage (forward and backward counted apart). */
  readonly graphs: number;
  /** transformer_engine: the layer-input sets kept (one per layer and micro-batch in flight). */
  readonly staticSets: number;
  /** Held for the whole run. */
  readonly resident: readonly { readonly label: string; readonly bytes: number }[];
  /** local: held from a chunk's forward to its backward, per micro-batch (0 for a chunk without layers). */
  readonly keptPerMicroBatch: (chunk: number) => number;
}

/**
 * The peak over stage `stage`'s order of Σ layers of the chunks whose forward has run and whose
 * backward has not: the (layer, micro-batch) pairs in flight.
 */
export function layersInFlight(
  shape: Pick<GraphShape, 'p' | 'v' | 'm'>,
  stage: number,
  layersPerChunk: readonly number[],
): number {
  let open = 0;
  let peak = 0;
  for (const op of stageOrder(shape.p, shape.v, shape.m, stage)) {
    open += (op.pass === 'forward' ? 1 : -1) * (layersPerChunk[op.chunk] ?? 0);
    peak = Math.max(peak, open);
  }
  return peak;
}

/**
 * layersInFlight under --overlap-moe-expert-parallel-comm, where transformer_engine captures in
 * get_overlap_moe_expert_parallel_comm_order's layer-wise order (cuda_graphs.py:2537-2552,
 * :2826-2935): the chunk forwards before the first backward run whole (warmup, :2901-2904); then
 * each (backward, forward) pair of the stage's order, from the first backward to the last forward,
 * runs layer by layer, the pair's second op (a forward) before its first (:2907-2925); the backwards after the
 * last forward run whole (:2929-2933). The overlap holds one more layer in flight than the
 * chunk-wise order while a pair runs: L + 1 at p = 1 with m ≥ 2.
 */
export function overlapLayersInFlight(
  shape: Pick<GraphShape, 'p' | 'v' | 'm'>,
  stage: number,
  layersPerChunk: readonly number[],
): number {
  const order = stageOrder(shape.p, shape.v, shape.m, stage);
  const layers = (k: number): number => layersPerChunk[order[k]!.chunk] ?? 0;
  const sign = (k: number): number => (order[k]!.pass === 'forward' ? 1 : -1);
  const firstBackward = order.findIndex((op) => op.pass === 'backward');
  const lastForward = order.map((op) => op.pass).lastIndexOf('forward');
  let open = 0;
  let peak = 0;
  const step = (d: number): void => {
    open += d;
    peak = Math.max(peak, open);
  };
  for (let k = 0; k < firstBackward; k++) step(layers(k));
  for (let k = firstBackward; k + 1 <= lastForward; k += 2)
    for (let j = 0; j < Math.max(layers(k), layers(k + 1)); j++) {
      if (j < layers(k + 1)) step(sign(k + 1));
      if (j < layers(k)) step(sign(k));
    }
  return peak;
}

/**
 * The static buffers and graph count of `impl` on stage `stage` holding `layersPerChunk` layers,
 * the whole layer captured (no --cuda-graph-modules). Rows per rank S = s/cp, over t under SP
 * (module.py:247-254).
 *
 * - transformer_engine (TECudaGraphHelper): one micro-batch captured at p = 1, all m at p > 1 or
 *   with --overlap-moe-expert-parallel-comm (cuda_graphs.py:2505-2512; its layer-wise order,
 *   overlapLayersInFlight), a forward and a backward graph per layer and captured micro-batch
 *   (:2735-2752). Each (layer, micro-batch) gets static inputs made outside the pool and held by
 *   its graph for the run (TE graph.py:693-696 copies into them at each replay): hidden_states
 *   [S, b, h] in bf16 (module.py:257-262) and, with attention captured (the whole layer or a
 *   scope with attn), a boolean mask [b, 1, s/cp, s] (transformer_layer.py:1097-1107). A partial
 *   scope keeps one graph pair per layer and captured micro-batch (one callable per layer,
 *   _te_cuda_graph_capture, transformer_layer.py:1138-1193): with mlp alone its input is the
 *   attention's output, run eagerly before the replay (:1202-1207), [S, b, h] as well. A set is reused once its backward has run
 *   (cuda_graphs.py:2243-2255, :2371-2455): the sets kept are the (layer, micro-batch) pairs in
 *   flight at once. One output-gradient buffer [S, b, h] serves every backward graph of that
 *   shape (TE graph.py:512-525, `_reuse_graph_input_output_buffers`, set from TE 2.7,
 *   cuda_graphs.py:2592-2595). Outputs and input gradients live in the pool, freed into it once
 *   used (TE graph.py:566-600).
 * - local (CudaGraphManager): one runner per layer reused across micro-batches at p = 1, one per
 *   layer and micro-batch at p > 1 (cuda_graphs.py:1833-1836, :1874-1930), each a forward and a
 *   backward graph. A graph's input that is the previous graph's output reuses that buffer; the
 *   chunk's first layer copies its eager input into a fresh pool buffer (:1199-1246), kept while
 *   saved for backward (:1079-1135, the first norm saves its input): one [S, b, h] per
 *   micro-batch in flight beside the eager input the schedule keeps.
 * - full_iteration (FullCudaGraphWrapper): one graph for the forward-backward; the data loader's
 *   m batches of each model chunk copied into static buffers for the run (full_cuda_graph.py:97-135,
 *   :151-183): tokens, labels and position_ids int64, loss_mask fp32 ([b, s] each: 28·b·s bytes)
 *   and the boolean attention mask [b, 1, s, s] (gpt_dataset.py:798-839, made by default,
 *   arguments.py:3165-3167), on the ranks that read the loader (TP rank 0, training.py:4550).
 */
export function cudaGraphStage(
  impl: Exclude<CudaGraphImpl, 'none'>,
  shape: GraphShape,
  stage: number,
  layersPerChunk: readonly number[],
): CudaGraphStage {
  const { s, b, h, t, sp, cp, p, v, m } = shape;
  const rows = s / cp / (sp ? t : 1);
  const layers = layersPerChunk.reduce((a, n) => a + n, 0);
  // transformer_engine captures every micro-batch at p > 1 or with the EP overlap (cuda_graphs.py:2506-2512).
  const overlap = impl === 'transformer_engine' && shape.overlapEpComm === true;
  const captured = p > 1 || overlap ? m : 1;
  const none = (): number => 0;
  if (impl === 'full_iteration')
    return {
      impl,
      graphs: 1,
      staticSets: 0,
      resident: [
        { label: `CUDA graph static batches (${m * v} micro-batches)`, bytes: m * v * (28 * b * s + b * s * s) },
      ],
      keptPerMicroBatch: none,
    };
  if (impl === 'local')
    return {
      impl,
      graphs: 2 * layers * captured,
      staticSets: 0,
      resident: [],
      keptPerMicroBatch: (ch) => ((layersPerChunk[ch] ?? 0) > 0 ? rows * b * h * shape.dtypeBytes : 0),
    };
  const sets =
    layers === 0 ? 0 : (overlap ? overlapLayersInFlight : layersInFlight)({ p, v, m: captured }, stage, layersPerChunk);
  const input = rows * b * h * 2;
  const scope = shape.scope ?? [];
  const mask = !scope.length || scope.includes('attn') ? b * (s / cp) * s : 0;
  return {
    impl,
    graphs: 2 * layers * captured,
    staticSets: sets,
    resident:
      layers === 0
        ? []
        : [
            {
              label: `CUDA graph static inputs (${sets} layer inputs${mask ? ' and masks' : ''})`,
              bytes: sets * (input + mask),
            },
            { label: 'CUDA graph static output gradient', bytes: input },
          ],
    keptPerMicroBatch: none,
  };
}
