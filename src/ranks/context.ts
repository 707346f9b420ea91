import type { AllToAll } from '../comm/all-to-all.ts';
import type { Collectives, TransportName } from '../comm/collectives.ts';
import type { GpuCollectives } from '../comm/gpu-collectives.ts';
import type { HostTensor } from '../comm/host-tensor.ts';
import type { PointToPoint } from '../comm/p2p.ts';
import type { SabRing } from '../comm/sab-layout.ts';
import type { TraceRecorder } from '../core/trace-recorder.ts';
import type { GroupView } from '../mesh/process-group.ts';
import type { GroupKind, MeshCoords, MeshSpec } from '../mesh/rank-layout.ts';

/** A rank's communicators in one of its groups: collectives and point-to-point, on host arrays and on GPU tensors. */
export interface GroupComm {
  /** The group (absent in a plain pool: its one TP group, ranks 0…t−1). */
  readonly view?: GroupView;
  readonly comm: Collectives<HostTensor, Float32Array> & AllToAll<HostTensor, Float32Array> & PointToPoint<HostTensor>;
  readonly gpuComm: GpuCollectives;
}

/** Where a rank sits in the pool's mesh (a plain pool: tp = t), and its groups. */
export interface RankMeshContext {
  readonly spec: MeshSpec;
  /** The worker's global rank, 0…N−1. */
  readonly rank: number;
  readonly coords: MeshCoords;
  /** This rank's group of `kind`; throws naming the kinds wired when the pool did not wire it. */
  group(kind: GroupKind): GroupComm;
}

/**
 * What a program running on one rank is handed: its device, its communicators, its trace. `rank`,
 * `size`, `comm` and `gpuComm` are its TP group's (in a plain pool, the pool's one group), so the
 * tensor-parallel layer runs unchanged on a TP group inside a larger mesh; `mesh` has the rest.
 */
export interface RankContext {
  /** The rank in its TP group (its tp coordinate). */
  readonly rank: number;
  /** The TP degree t. */
  readonly size: number;
  readonly mesh: RankMeshContext;
  readonly transport: TransportName;
  readonly device: GPUDevice;
  /** Collectives (and point-to-point) on host arrays (a result may be written into the caller's Float32Array: `out`). */
  readonly comm: Collectives<HostTensor, Float32Array> & AllToAll<HostTensor, Float32Array> & PointToPoint<HostTensor>;
  /** The same collectives on this rank's GPU tensors (read back → move → upload; a result may go into the caller's tensor: `out`). */
  readonly gpuComm: GpuCollectives;
  /** Every collective lands here; kernels may record their own events too. */
  readonly trace: TraceRecorder;
  /** The transport's #slowlink switch: chunks this rank puts on the ring are moved linkFactor times. */
  readonly link: { linkFactor: number };
}

/** A function every rank runs on its shard: structured-cloneable args in, cloneable result out. */
export type RankProgram<A, R> = (ctx: RankContext, args: A) => R | Promise<R>;

/** Programs a rank worker serves, by name. */
export type RankPrograms = Readonly<Record<string, RankProgram<never, unknown>>>;

/** Argument type of a program. */
export type ProgramArgs<P> = P extends RankProgram<infer A, unknown> ? A : never;

/** Result type of a program (awaited). */
export type ProgramResult<P> = P extends RankProgram<never, infer R> ? Awaited<R> : never;

/** How the pool wires one rank into the group. */
export type RankTransportInit =
  | { readonly kind: 'sab-ring'; readonly ring: SabRing }
  | { readonly kind: 'message-port'; readonly ports: readonly (MessagePort | undefined)[] };

/** How a rank joins one of its groups: which group (absent: a plain pool's one group) and over what. */
export interface RankGroupInit {
  readonly kind: GroupKind;
  /** The group rank (ring position) of this worker in it. */
  readonly rank: number;
  readonly size: number;
  readonly view?: GroupView;
  /** 'solo': a group of this rank alone (nothing moves; no shared memory or ports). */
  readonly transport: RankTransportInit | { readonly kind: 'solo' };
}

/** The one message that sets a rank up: its global rank, the mesh and its groups ('tp' among them). */
export interface RankInit {
  readonly rank: number;
  readonly mesh: MeshSpec;
  readonly timeoutMs: number;
  readonly groups: readonly RankGroupInit[];
}

/** What a rank reports once its device is up. */
export interface RankInfo {
  readonly rank: number;
  readonly adapter: string;
  readonly transport: TransportName;
}
