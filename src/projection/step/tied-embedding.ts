import type { TrainDtype } from '../../hardware/dtype.ts';
import { collectiveTimeUs, type Interconnect } from '../../hardware/interconnect.ts';
import type { SystemSpec } from '../../hardware/systems.ts';
import { stateBytes } from '../links/data-parallel.ts';

/**
 * Tied embeddings with p > 1 (and a vocabulary): the embedding-gradient all-reduce between the
 * first and the last pipeline stage, a group of 2 whatever p is, on `link` (group-links.ts's
 * `embedding`), ms: (base + allReduce(P_emb · gradient bytes, 2, link)) / 1e3; 0 otherwise.
 */
export function tiedEmbeddingAllReduceMs(
  tied: boolean,
  pp: number,
  vocab: number,
  embeddingParams: number,
  dtype: TrainDtype,
  link: Interconnect,
  system: SystemSpec,
): number {
  return tied && pp > 1 && vocab > 0
    ? (system.collectiveBaseUs +
        collectiveTimeUs('allReduce', embeddingParams * stateBytes(dtype, false, 1).grads, 2, link)) /
        1e3
    : 0;
}
