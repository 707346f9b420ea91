import { opSpec, type Backend } from './backend.ts';
import type { LocalDims } from './dims.ts';
import { regather, type LayerComm } from './layer-comm.ts';
import { tensorParallelRegion } from './mappings.ts';
import { mlpBackward, mlpForward, type MlpSaved } from './mlp.ts';

/**
 * The labels of the block's collectives in the trace and the plan (the layer's and the
 * classroom's differ; labels are for people, nothing decides from them).
 */
export interface MlpBlockLabels {
  /** f forward under SP: the all-gather [s/t, b, h] → [s, b, h] of the MLP input. */
  readonly gather: string;
  /** g forward: the all-reduce of the partial sums [s, b, h] (SP: reduce-scatter to [s/t, b, h]). */
  readonly reduce: string;
  /** g backward under SP: the all-gather of the upstream gradient [s/t, b, h] → [s, b, h]. */
  readonly reduceBackward: string;
  /** f backward: the all-reduce of the partial dX [s, b, h] (SP: reduce-scatter), asynchronous under the wgrad GEMMs. */
  readonly dgradReduce: string;
  /**
   * Under SP, the re-gather of the [s/t, b, h] input for the wgrad GEMMs (the forward frees the
   * gathered input, as Megatron saves only the shard). Absent: the block keeps the gathered input
   * from forward instead (the classroom shows it and feeds attention with it).
   */
  readonly regather?: string;
}

/** What the forward keeps for backward. */
export interface MlpBlockSaved<T> {
  /** This rank's input [sl, b, h] (sl = s/t under SP, else s). */
  readonly shard: T;
  /** The input after f, [s, b, h]: absent under SP with a `regather` label (freed; re-gathered in backward). */
  readonly input?: T;
  readonly mlp: MlpSaved<T>;
}

/**
 * Called before a reduction that may work in place with the tensor it reduces — the
 * RowParallelLinear's partial sums Zᵢ [s, b, h] in forward, this rank's partial dXᵢ [s, b, h] in
 * backward — and its result returned as `partial` (the classroom reads them).
 */
export type SeePartial<T, P> = (partial: T) => Promise<P>;

/**
 * The tensor-parallel SwiGLU MLP block of Megatron's TransformerLayer on one rank, forward:
 * x [sl, b, h] → f (identity; SP: all-gather) → gate/up ColumnParallelLinear → SwiGLU (local) →
 * down RowParallelLinear → g (all-reduce; SP: reduce-scatter) → out [sl, b, h].
 */
export async function mlpBlockForward<T, P = never>(
  be: Backend<T>,
  lc: LayerComm<T>,
  D: LocalDims,
  sp: boolean,
  x: T,
  w: { readonly wfc1: T; readonly wdown: T },
  labels: MlpBlockLabels,
  seePartial?: SeePartial<T, P>,
): Promise<{ out: T; saved: MlpBlockSaved<T>; partial?: P }> {
  const { enter, leave } = tensorParallelRegion(sp);
  const input = sp ? await lc.forward(opSpec(labels.gather, 'sequence'), enter, x) : x;
  const mlp = mlpForward(be, D, input, w.wfc1, w.wdown);
  const freed = sp && labels.regather !== undefined;
  if (freed) be.release(input);
  const partial = await seePartial?.(mlp.out);
  const out = await lc.forward(opSpec(labels.reduce, 'row'), leave, mlp.out);
  if (out !== mlp.out) be.release(mlp.out); // the partial sums, reduced
  return { out, saved: { shard: x, ...(!freed && { input }), mlp: mlp.saved }, partial };
}

/**
 * Backward of mlpBlockForward with the conjugate collectives, in Megatron's order: g backward
 * (identity; SP: all-gather dY), down's dgrad and wgrad, SwiGLU backward, [SP: re-gather of the
 * input issued] gate/up dgrad, f backward (all-reduce of dX; SP: reduce-scatter) issued
 * asynchronously, gate/up wgrad under it, then its wait. Returns the upstream gradient after g's
 * backward (dOut [s, b, h]) and dx [sl, b, h]; writes the weight gradients into dw.
 */
export async function mlpBlockBackward<T, P = never>(
  be: Backend<T>,
  lc: LayerComm<T>,
  D: LocalDims,
  sp: boolean,
  dy: T,
  saved: MlpBlockSaved<T>,
  w: { readonly wfc1: T; readonly wdown: T },
  dw: { readonly wfc1: T; readonly wdown: T },
  labels: MlpBlockLabels,
  seePartial?: SeePartial<T, P>,
): Promise<{ dOut: T; dx: T; partial?: P }> {
  const { enter, leave } = tensorParallelRegion(sp);
  const dOut = sp ? await lc.backward(opSpec(labels.reduceBackward, 'sequence'), leave, dy) : dy;
  const again =
    saved.input === undefined && labels.regather !== undefined
      ? regather(lc, labels.regather, enter, saved.shard)
      : undefined;
  const mb = mlpBackward(be, D, dOut, saved.mlp, w.wfc1, w.wdown, dw.wfc1, dw.wdown, again?.issue);
  const input = saved.input ?? (await again?.wait());
  if (input === undefined) throw new Error('mlpBlockBackward: the MLP input was neither kept nor re-gathered.');
  const partial = await seePartial?.(mb.dx);
  const pending = lc.backward(opSpec(labels.dgradReduce, 'column', { async: true }), enter, mb.dx);
  mb.wgrad(input);
  if (again) be.release(input); // the re-gathered copy: last read by the wgrad GEMMs
  const dx = await pending;
  if (dx !== mb.dx) be.release(mb.dx); // the partial dX, reduced
  return { dOut, dx, partial };
}
