/**
 * How the d replicas synchronise: plain DDP all-reduces each bucket of gradients and every replica
 * steps Adam on all its parameters; the distributed optimizer reduce-scatters each bucket, steps
 * Adam on the rank's shard and all-gathers the updated parameters.
 */
export type DpSyncMode = 'all-reduce' | 'distributed-optimizer';

/** Every sync mode. */
export const dpSyncModes: readonly DpSyncMode[] = ['all-reduce', 'distributed-optimizer'];

/** Data parallel's options: the sync, whether a bucket's sync is issued as soon as its last gradient exists, and the bucket size (elements). */
export interface DpOptions {
  readonly mode: DpSyncMode;
  /** Megatron's overlap_grad_reduce; without it one bucket, synced after backward (bucket_size = None). */
  readonly overlap: boolean;
  /** Megatron's bucket_size in elements (only with overlap); absent: Megatron's default max(40M, 1M·d). */
  readonly bucketSize?: number;
}

/** Throws naming what is wrong with `o` and what to write instead (before any rank sees it: a program that throws breaks its pool). */
export function checkDpOptions(o: DpOptions): void {
  if (!dpSyncModes.includes(o.mode))
    throw new Error(`data parallel: sync mode "${String(o.mode)}" is not one of ${dpSyncModes.join(', ')}.`);
  if (typeof o.overlap !== 'boolean')
    throw new Error(`data parallel: overlap must be true (sync each bucket during backward) or false (after it).`);
  if (o.bucketSize !== undefined && !(Number.isInteger(o.bucketSize) && o.bucketSize >= 1))
    throw new Error(
      `data parallel: bucket size ${o.bucketSize} must be a whole number of elements ≥ 1 (or left out for Megatron's default).`,
    );
}
