// Stragglers of a measured job: its NCCL kernels paired into calls, the last rank to enter each named.
import { analyseStragglers, matchCalls, type StragglerAnalysis } from '../schedule/stragglers.ts';
import type { GpuSlice } from './kineto-types.ts';
import type { NcclCollective } from './nccl-kernel.ts';

/** Which NCCL call a measured call is: its collective, process group ("" when not recorded) and place in the group's order. */
export interface NcclCallKey {
  readonly collective: NcclCollective;
  readonly group: string;
  /** 0-based: the group's k-th call in the window. */
  readonly index: number;
}

/** The process group of an NCCL kernel as recorded (its ranks, name or description), "" when none is. */
const groupOf = (s: GpuSlice): string => s.nccl?.groupRanks ?? s.nccl?.groupName ?? s.nccl?.groupDesc ?? '';

/**
 * Who waited for whom in a measured window: the NCCL kernels of every rank (`slices` of any
 * work; others are ignored) paired into calls by `matchCalls` (a rank's k-th kernel of a group is
 * the group's k-th call), each rank's kernel an entry [start, end); the straggler of a call is the
 * rank whose kernel started last (`analyseStragglers`).
 */
export function measuredStragglers(slices: readonly GpuSlice[]): StragglerAnalysis<NcclCallKey> {
  const comm = slices.filter((s) => s.work === 'comm');
  const calls = matchCalls(
    comm,
    (s) => s.rank,
    (s) => s.t0,
    groupOf,
  );
  const index = new Map<string, number>();
  return analyseStragglers(
    calls.map((call) => {
      const group = groupOf(call[0]!);
      const k = index.get(group) ?? 0;
      index.set(group, k + 1);
      return {
        key: { collective: call[0]!.nccl?.collective ?? 'unknown', group: call[0]!.nccl?.groupDesc ?? group, index: k },
        entries: call.map((s) => ({ rank: s.rank, t0: s.t0, t1: s.t1 })),
      };
    }),
  );
}
