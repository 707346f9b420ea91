/**
 * The rules a mesh run (t × p × d rank workers training L blocks on m micro-batches) must meet,
 * each found before any worker starts and said at the setting that breaks it, with the values
 * that would pass (pure).
 *
 * - ranks: t·p·d ≤ maxMeshRanks (rank-layout.ts).
 * - split: L over p stages × v chunks as Megatron-Core's get_num_layers_to_build allows
 *   (pipeline-split.ts splitLayers: L mod p = 0 and (L/p) mod v = 0).
 * - schedule and v: interleaved needs v ≥ 2, every other schedule runs v = 1
 *   (pipeline-schedules.ts); interleaved's rule on m (interleavedRule).
 * - global batch: Megatron's G = b·d·m (sequences; --global-batch-size must be a multiple of
 *   --micro-batch-size × DP, training.py get_num_microbatches): with G set, m = G/(b·d).
 * - vocabulary: the first stage embeds tokens and the last computes the loss (vocab > 0).
 */
import { interleavedRule, type PipelineScheduleName } from './pipeline-schedules.ts';
import { splitLayers } from './pipeline-split.ts';
import { maxMeshRanks } from './rank-layout.ts';

/** The layout a mesh run takes: the page's settings of the same names. */
export interface MeshLayout {
  readonly tp: number;
  readonly pp: number;
  readonly vpp: number;
  readonly dp: number;
  /** Micro-batches per replica per step. */
  readonly m: number;
  readonly schedule: PipelineScheduleName;
  /** L: transformer blocks of the model. */
  readonly layers: number;
  /** Micro-batch size b (sequences). */
  readonly b: number;
  /** The global batch in sequences, or 'auto' (b·d·m). */
  readonly gbatch: number | 'auto';
  readonly vocab: number;
}

/** The setting a finding belongs to (a MeshLayout key). */
export type MeshField = keyof MeshLayout;

/** One finding: the setting to show it at, every setting involved, and the message. */
export interface MeshIssue {
  readonly field: MeshField;
  readonly fields: readonly MeshField[];
  readonly message: string;
}

/** True when the settings ask for more than one TP group: a pipeline (p > 1) or replicas (d > 1). */
export const isMesh = (l: Pick<MeshLayout, 'pp' | 'dp'>): boolean => l.pp > 1 || l.dp > 1;

/** Values in 1…max for which `ok` holds, written "1, 2, 4" (or "none"). */
function legalList(max: number, ok: (x: number) => boolean): string {
  const xs: number[] = [];
  for (let x = 1; x <= max; x++) if (ok(x)) xs.push(x);
  return xs.length ? xs.join(', ') : 'none';
}

const splits = (L: number, p: number, v: number): boolean => {
  try {
    splitLayers(L, p, v);
    return true;
  } catch {
    return false;
  }
};

/** Every rule a mesh layout breaks (empty: it runs). */
export function checkMeshLayout(l: MeshLayout): MeshIssue[] {
  const out: MeshIssue[] = [];
  const ranks = l.tp * l.pp * l.dp;
  if (ranks > maxMeshRanks)
    out.push({
      field: l.dp > 1 ? 'dp' : 'pp',
      fields: ['tp', 'pp', 'dp'],
      message: `t × p × d = ${l.tp} × ${l.pp} × ${l.dp} = ${ranks} rank workers, more than the ${maxMeshRanks} a mesh holds here (each rank is a worker with its own GPUDevice; one shared-memory ring serves at most ${maxMeshRanks}): legal p at t = ${l.tp}, d = ${l.dp}: ${legalList(maxMeshRanks, (p) => l.tp * p * l.dp <= maxMeshRanks)}; legal d at t = ${l.tp}, p = ${l.pp}: ${legalList(maxMeshRanks, (d) => l.tp * l.pp * d <= maxMeshRanks)}.`,
    });
  if (!(l.vocab > 0))
    out.push({
      field: 'vocab',
      fields: ['vocab'],
      message: `a pipeline or data-parallel run trains a model: the first stage embeds tokens and the last computes the loss, so it needs vocab > 0 (got ${l.vocab}); choose a preset with a vocabulary (classroom, llama-gqa) or set vocab.`,
    });
  if (l.schedule === 'interleaved' && l.vpp < 2)
    out.push({
      field: 'vpp',
      fields: ['vpp', 'schedule'],
      message: `the interleaved schedule needs v ≥ 2 model chunks per stage (got v = ${l.vpp}): write vpp=2 or more, or schedule=1f1b.`,
    });
  else if (l.schedule !== 'interleaved' && l.vpp !== 1)
    out.push({
      field: 'schedule',
      fields: ['schedule', 'vpp'],
      message: `v = ${l.vpp} model chunks per stage run only under the interleaved schedule (${l.schedule} runs v = 1): write schedule=interleaved, or vpp=1.`,
    });
  if (!splits(l.layers, l.pp, l.vpp))
    out.push({
      field: 'layers',
      fields: ['layers', 'pp', 'vpp'],
      message: `L = ${l.layers} layers do not split over p = ${l.pp} stages × v = ${l.vpp} chunks as Megatron-Core does (get_num_layers_to_build: L mod p = 0 and (L/p) mod v = 0). Legal p at this L and v: ${legalList(Math.min(l.layers, 64), (p) => splits(l.layers, p, l.vpp))}; legal L up to 64 at this p and v: ${legalList(64, (L) => splits(L, l.pp, l.vpp))}.`,
    });
  if (l.schedule === 'interleaved') {
    const refused = interleavedRule(l.pp, l.m);
    if (refused) out.push({ field: 'm', fields: ['m', 'pp', 'schedule'], message: refused });
  }
  if (l.gbatch !== 'auto' && l.gbatch !== l.b * l.dp * l.m) {
    const per = l.b * l.dp;
    const m = l.gbatch / per;
    out.push({
      field: 'm',
      fields: ['m', 'dp', 'gbatch'],
      message: Number.isInteger(m)
        ? `the global batch G = ${l.gbatch} sequences is b·d·m (Megatron's get_num_microbatches: m = G/(b·d)); at b = ${l.b}, d = ${l.dp} that is m = ${m}, not ${l.m}: write m=${m}, or gbatch=${per * l.m}, or gbatch=auto.`
        : `the global batch G = ${l.gbatch} sequences must be a multiple of b·d = ${l.b}·${l.dp} = ${per} (Megatron asserts it: --global-batch-size divisible by --micro-batch-size × DP); at m = ${l.m} write gbatch=${per * l.m}, or gbatch=auto.`,
    });
  }
  return out;
}
