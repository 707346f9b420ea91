import { hostTensor, type HostTensor } from '../comm/host-tensor.ts';
import type { GroupKind } from '../mesh/rank-layout.ts';
import { epDispatch, type EpDispatchResult, type LocalExperts } from '../parallel/ep-dispatch.ts';
import type { RankContext } from './context.ts';

/** One EP rank's routed tokens: x [T, h] as `data`; pick j of token t goes to expert topIdx[t·k + j], weighted topProb[t·k + j]. */
export interface EpDispatchArgs {
  /** The group the experts are spread over (default 'ep'). */
  readonly group?: GroupKind;
  readonly experts: number;
  readonly topk: number;
  readonly shape: readonly [number, number];
  readonly data: Float32Array;
  readonly topIdx: readonly number[];
  readonly topProb: readonly number[];
}

/**
 * Stand-in experts until the grouped GEMM (the MoE kernels) takes their place: expert e scales its
 * rows by e + 1, so every combined output says which experts made it.
 */
export const scaleByExpert: LocalExperts = (rows, first) =>
  rows.map(
    (r, l): HostTensor =>
      hostTensor(
        r.shape,
        r.data.map((v) => v * (first + l + 1)),
      ),
  );

/**
 * The alltoall token dispatcher on this rank's host data over its EP group (parallel/ep-dispatch.ts):
 * counts all-gathered, tokens dispatched to the ranks owning their experts, the stand-in experts,
 * and the outputs combined back; returns the splits, each local expert's rows and the output.
 */
export function epDispatchProgram(ctx: RankContext, a: EpDispatchArgs): Promise<EpDispatchResult> {
  const { comm } = ctx.mesh.group(a.group ?? 'ep');
  return epDispatch(
    comm,
    { experts: a.experts, topk: a.topk, x: hostTensor(a.shape, a.data), topIdx: a.topIdx, topProb: a.topProb },
    scaleByExpert,
  );
}
