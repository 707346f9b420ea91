// What a sweep reports for one degree (pure data): its GEMMs and collectives, the oracle, memory,
// the scheduled timelines and the transfer pairs; session/sweep.ts measures them.
import type { RankMemory } from '../accounting/accounting.ts';
import type { LayerConfig } from '../parallel/config.ts';
import type { OracleEntry } from '../parallel/oracle.ts';
import type { GemmSite, OpPhase, OpSplit } from '../parallel/plan-types.ts';
import type { KernelTransferTime } from './transfer-slowdown.ts';

/** One GEMM of the layer at one degree: local shape and measured speed (mean over ranks). */
export interface SweepGemm {
  /** Its label, for people. */
  readonly name: string;
  /** Which GEMM of the layer it is (the same at every degree): what the views match by. */
  readonly site: GemmSite;
  readonly phase: OpPhase;
  /** How the GEMM is split across ranks (the plan's op.split). */
  readonly split: OpSplit;
  readonly M: number;
  readonly N: number;
  readonly K: number;
  readonly batch: number;
  readonly flops: number;
  readonly ms: number;
  readonly gflops: number;
}

/** One collective at one degree: sizes from the plan, time measured on rank 0 and modeled. */
export interface SweepCollective {
  readonly name: string;
  readonly phase: OpPhase;
  readonly op: string;
  readonly mapping: string;
  readonly payloadBytes: number;
  readonly ringBytesSent: number;
  readonly measuredMs?: number;
  readonly modeledMs?: number;
}

/** Everything the sweep reports for one degree. */
export interface SweepDegree {
  readonly config: LayerConfig;
  readonly transport: string;
  readonly oracle: { readonly pass: boolean; readonly worst: OracleEntry; readonly entries: OracleEntry[] };
  readonly cpuOracle?: { readonly pass: boolean; readonly worst: OracleEntry };
  /** Why the CPU twins did not run, when they did not. */
  readonly cpuSkipped?: string;
  readonly loss?: number;
  readonly timing: { readonly method: string; readonly quantized: boolean };
  readonly gemms: SweepGemm[];
  readonly collectives: SweepCollective[];
  readonly memory: RankMemory[];
  readonly computeMs: number[];
  /** The step scheduled from the measured kernel times with comm measured here and modeled on `net`. */
  readonly timelines: SweepTimeline[];
  /** With `dump`: the run's tensors as a .safetensors file, base64 (see layerTensors). */
  readonly safetensors?: string;
  /** With `transferPairs`: every kernel timed with the ring moving and with nothing moving, and the step both ways. */
  readonly transfer?: SweepTransfer;
  /** Why `transfer` is missing though asked for. */
  readonly transferSkipped?: string;
}

/**
 * What sharing this machine's cores with the ring cost the kernels of one run: per compute op the
 * mean over ranks of both times, whether it ran under a transfer (on any rank) and the ratio; the
 * ratio over the kernels under a transfer and over the rest (the control); the step's wall time
 * both ways, and the step scheduled with measured transport from the kernels alone and from the
 * kernels under transfer slowed (overlap on), ms.
 */
export interface SweepTransfer {
  readonly pairs: number;
  readonly kernels: {
    readonly op: string;
    readonly aloneMs: number;
    readonly overlappedMs: number;
    readonly underTransfer: boolean;
    readonly slowdown: number;
  }[];
  readonly slowdown: { readonly underTransfer: number; readonly others: number };
  readonly stepWallMs: KernelTransferTime;
  readonly scheduledStepMs: KernelTransferTime;
}

/** Exposed communication of one scheduled step (ms): per rank, and the step time (slowest rank). */
export interface SweepTimeline {
  readonly comm: string;
  readonly overlap: boolean;
  readonly stepMs: number;
  readonly computeMs: number[];
  readonly commMs: number[];
  readonly exposedMs: number[];
}
