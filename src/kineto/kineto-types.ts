// The playground's model of a PyTorch profiler (Kineto) trace: the GPU side of each rank.
import type { NcclCall } from './nccl-kernel.ts';

/**
 * What a GPU slice is: a compute kernel, an NCCL kernel (communication), or a copy/fill
 * (`gpu_memcpy`, `gpu_memset`), which is neither compute nor communication for the overlap analysis.
 */
export type GpuWork = 'compute' | 'comm' | 'memcpy' | 'memset';

/** One GPU activity of one rank: [t0, t1) in ms on the job's clock (0 = the earliest kept event of all files). */
export interface GpuSlice {
  readonly rank: number;
  readonly work: GpuWork;
  /** CUDA device (the event's pid) and stream (args.stream, else the tid). */
  readonly device: number;
  readonly gpuStream: number;
  /** The kernel's name as recorded (demangled C++), or "Memcpy DtoD (Device -> Device)", "Memset (Device)". */
  readonly name: string;
  readonly t0: number;
  readonly t1: number;
  /** The ProfilerStep#N this slice belongs to (see RankTrace.steps); undefined outside every step. */
  readonly step?: number;
  /** NCCL kernels: what the call was. */
  readonly nccl?: NcclCall;
  /** Memcpy/memset: bytes moved (args.bytes). */
  readonly bytes?: number;
}

/** A `ProfilerStep#N` range of one rank, ms on the job's clock. */
export interface StepMark {
  readonly step: number;
  readonly t0: number;
  readonly t1: number;
  /** Where the range comes from: the GPU-side annotation, or the CPU-side one (kernels then belong to the step their launch fell in). */
  readonly source: 'gpu_user_annotation' | 'cpu';
}

/** A process group as `distributedInfo.pg_config` lists it. */
export interface ProcessGroupInfo {
  readonly name: string;
  readonly desc: string;
  readonly size: number;
  readonly ranks: string;
}

/** What was read from a file and what was left out, for the "memory bound" and the notes. */
export interface ReadStats {
  readonly chars: number;
  readonly events: number;
  /** GPU slices kept. */
  readonly kept: number;
  /** Events dropped by category (cpu_op, cuda_runtime, python_function, …): only GPU-side events are kept. */
  readonly dropped: Readonly<Record<string, number>>;
  /** Events longer than the scanner's per-event limit, skipped. */
  readonly oversized: number;
  /** Complete GPU events without a finite ts/dur, skipped. */
  readonly untimed: number;
}

/** One rank's trace file, read. */
export interface RankTrace {
  readonly file: string;
  readonly rank: number;
  /** Where the rank number comes from: `distributedInfo.rank`, or the file's place in the list when the trace has none. */
  readonly rankSource: 'distributedInfo' | 'file order';
  readonly worldSize?: number;
  readonly backend?: string;
  readonly groups: readonly ProcessGroupInfo[];
  /** `deviceProperties[].name` of the devices the slices ran on, e.g. "NVIDIA H100 80GB HBM3". */
  readonly deviceNames: readonly string[];
  readonly slices: readonly GpuSlice[];
  readonly steps: readonly StepMark[];
  readonly stats: ReadStats;
  /** Things the reader inferred or left out, in words. */
  readonly notes: readonly string[];
}

/** Every rank of one job, on one clock (ms; 0 = the earliest kept GPU event of all files). */
export interface MeasuredTrace {
  readonly ranks: readonly RankTrace[];
  readonly notes: readonly string[];
}
