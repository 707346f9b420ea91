import type { Collectives, TransportName } from '../comm/collectives.ts';
import type { GpuCollectives } from '../comm/gpu-collectives.ts';
import type { HostTensor } from '../comm/host-tensor.ts';
import type { SabRing } from '../comm/sab-layout.ts';
import type { TraceRecorder } from '../core/trace-recorder.ts';

/** What a program running on one rank is handed: its device, its communicators, its trace. */
export interface RankContext {
  readonly rank: number;
  readonly size: number;
  readonly transport: TransportName;
  readonly device: GPUDevice;
  /** Collectives on host arrays (a result may be written into the caller's Float32Array: `out`). */
  readonly comm: Collectives<HostTensor, Float32Array>;
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

/** The one message that sets a rank up. */
export interface RankInit {
  readonly rank: number;
  readonly size: number;
  readonly timeoutMs: number;
  readonly transport: RankTransportInit;
}

/** What a rank reports once its device is up. */
export interface RankInfo {
  readonly rank: number;
  readonly adapter: string;
  readonly transport: TransportName;
}
