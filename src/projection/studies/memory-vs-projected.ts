// A rank's measured allocator history (PyTorch's memory snapshot) beside the projection's memory
// timeline of the pipeline stage that rank holds.
import type { LoadedSnapshot, MemoryHistory } from '../../kineto/memory-snapshot.ts';
import { manifestProjection, type JobManifest } from '../../megatron/job-manifest.ts';
import { memoryClasses, type MemoryClass, type StageMemory } from '../pipeline/memory-timeline.ts';
import { projectStep, type StepProjection } from '../step/cluster-projection.ts';
import { commandMachine } from '../layer/command-machine.ts';

/** One line of the table: bytes predicted, measured, or both; a line the projection does not model says so. */
export interface MemoryLine {
  readonly what: string;
  readonly predictedBytes?: number;
  readonly measuredBytes?: number;
  /** Why a side is empty, or what the line holds. */
  readonly note?: string;
}

/** The comparison for one rank. */
export interface MemoryVsProjected {
  readonly rank: number;
  readonly stage: number;
  readonly lines: readonly MemoryLine[];
  /** measured peak allocated / projected peak. */
  readonly ratio: number;
}

/** What each lifetime class holds, in the projection's words (memory-timeline.ts). */
const classWords: Readonly<Record<MemoryClass, string>> = {
  resident: 'weights, main weights and optimizer state (resident)',
  perStep: 'gradient buffer (per step)',
  perMicroBatch: 'activations kept for backward (per micro-batch)',
  transient: 'transient buffers inside an op (logits, recompute, p2p)',
};

/**
 * The pipeline stage of global rank `rank` in Megatron-Core's default order tp-cp-ep-dp-pp
 * (parallel_state.py RankGenerator): pp is the outermost, so a stage holds N/p consecutive ranks.
 */
export function stageOfRank(rank: number, gpus: number, pp: number): number {
  if (!(Number.isInteger(rank) && rank >= 0 && rank < gpus))
    throw new Error(`rank ${rank} is not one of the job's ${gpus} ranks (0…${gpus - 1}).`);
  return Math.floor(rank / (gpus / pp));
}

/**
 * Predicted (the stage's live bytes by class at its peak, and the peak) against measured (the peak of
 * allocated bytes; reserved; reserved − allocated at reserved's peak). The allocator's view has no
 * classes, so the classes are predicted only. Lines of their own for what the projection does not
 * model: the allocator's cache and fragmentation (measured), cuBLAS workspaces (inside the measured
 * allocated), and memory outside PyTorch's allocator —
 * the CUDA context and NCCL's buffers — which a snapshot does not see (nvidia-smi's used bytes minus
 * the peak reserved give them together).
 */
export function memoryVsProjected(
  history: MemoryHistory,
  projection: StepProjection,
  rank: number,
  gpus: number,
): MemoryVsProjected {
  const pp = projection.stageMemory.length;
  const stage = stageOfRank(rank, gpus, pp);
  const s: StageMemory = projection.stageMemory[stage]!;
  const lines: MemoryLine[] = [
    ...memoryClasses.map((c) => ({ what: classWords[c], predictedBytes: s.atPeak[c], note: 'at the projected peak' })),
    { what: 'peak allocated', predictedBytes: s.peakBytes, measuredBytes: history.peakAllocated },
    {
      what: 'peak reserved (allocated + the allocator’s cache)',
      measuredBytes: history.peakReserved,
      note: 'the projection prices allocated bytes only',
    },
    {
      what: 'allocator cache and fragmentation (reserved − allocated at reserved’s peak)',
      measuredBytes: history.cachedAtPeakReserved,
      note: 'not modelled',
    },
    {
      what: 'cuBLAS workspaces',
      note: 'not modelled; taken from PyTorch’s allocator, so inside the measured allocated',
    },
    {
      what: 'CUDA context, NCCL buffers (outside PyTorch’s allocator)',
      note: 'not modelled, and not in a snapshot: nvidia-smi’s used bytes − peak reserved',
    },
  ];
  return { rank, stage, lines, ratio: history.peakAllocated / s.peakBytes };
}

/**
 * The snapshot set beside the projection of the job its manifest describes (the rank's stage of
 * N = nodes × GPUs per node). Throws, naming the file, when the snapshot does not say its rank.
 */
export async function jobMemoryVsProjected(snapshot: LoadedSnapshot, job: JobManifest): Promise<MemoryVsProjected> {
  if (snapshot.rank === undefined)
    throw new Error(
      `${snapshot.file}: the snapshot does not say which rank wrote it; convert it again with --rank R (Megatron writes it on the last rank).`,
    );
  let described: ReturnType<typeof manifestProjection>;
  try {
    described = manifestProjection(job);
  } catch (e) {
    throw new Error(`${job.name}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  const { parsed, system } = described;
  const projection = await projectStep(parsed.setup, commandMachine(parsed, system));
  return memoryVsProjected(snapshot.history, projection, snapshot.rank, job.nodes * job.gpusPerNode);
}
