import { quoted } from '../core/quote.ts';
import { maxMeshRanks } from '../mesh/rank-layout.ts';
import { interleavedRule, pipelineScheduleNames, type PipelineScheduleName } from '../mesh/pipeline-schedules.ts';
import { splitLayers } from '../mesh/pipeline-split.ts';
import type { LayerConfig } from './config.ts';
import type { DpSyncMode } from './dp-options.ts';
import type { PipelineModel } from './pipeline-model.ts';

/** The settings of a pipeline × data-parallel run, by what a user sets (a CLI flag, a page control). */
export type PipelineField = 'pp' | 'vpp' | 'dp' | 'microBatches' | 'schedule' | 'layers' | 'globalBatch';

/** The CLI flag of each field (`npm run sweep`). */
export const pipelineFlags: Readonly<Record<PipelineField, string>> = {
  pp: '--pp',
  vpp: '--vpp',
  dp: '--dp',
  microBatches: '--micro-batches',
  schedule: '--schedule',
  layers: '--layers',
  globalBatch: '--global-batch',
};

/** A refused setting: which field caused it (where a page shows the message) and the message (rule and legal values). */
export class PipelineSettingError extends Error {
  override readonly name = 'PipelineSettingError';
  constructor(
    readonly field: PipelineField,
    message: string,
  ) {
    super(`${pipelineFlags[field]}: ${message}`);
  }
}

/** The settings as text (absent: the default). */
export type PipelineRawSettings = Partial<Record<PipelineField, string>> & { readonly distributedOptimizer?: boolean };

/** A pipeline run the ranks can do: the model, d replicas and their sync, the global batch in sequences (b·m·d). */
export interface PipelineSettings {
  readonly model: PipelineModel;
  readonly dp: number;
  readonly sync: DpSyncMode;
  readonly globalBatch: number;
}

function whole(field: PipelineField, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const v = Number(text);
  if (!/^\s*\d+\s*$/.test(text) || !Number.isSafeInteger(v) || v < 1)
    throw new PipelineSettingError(field, `must be a whole number ≥ 1, got ${quoted(text)}.`);
  return v;
}

/** "a, b, c, …": the first few values that pass `ok` from `from` on. */
function legal(ok: (x: number) => boolean, from = 1, count = 4, limit = 4096): string {
  const xs: number[] = [];
  for (let x = from; x <= limit && xs.length < count; x++) if (ok(x)) xs.push(x);
  return xs.length ? `${xs.join(', ')}, …` : 'none';
}

/**
 * The pipeline run of `raw` on top of one block's layer `layer` (its t, sizes and vocabulary), or
 * a PipelineSettingError naming the field, the rule (Megatron's where it has one) and the legal
 * values. Defaults: p, v, d 1; schedule 1f1b (interleaved when v > 1; --schedule interleaved alone
 * takes v = 2); m = 2·p, or G/(b·d) when only the global batch G is given; L the smallest multiple
 * of p·v that is ≥ 8.
 */
export function pipelineSettings(raw: PipelineRawSettings, layer: LayerConfig): PipelineSettings {
  const p = whole('pp', raw.pp, 1);
  const d = whole('dp', raw.dp, 1);
  let schedule: PipelineScheduleName | undefined;
  if (raw.schedule !== undefined) {
    if (!(pipelineScheduleNames as readonly string[]).includes(raw.schedule))
      throw new PipelineSettingError(
        'schedule',
        `unknown schedule ${quoted(raw.schedule)}; write one of ${pipelineScheduleNames.join(', ')}.`,
      );
    schedule = raw.schedule as PipelineScheduleName;
  }
  const v = whole('vpp', raw.vpp, schedule === 'interleaved' ? 2 : 1);
  schedule ??= v > 1 ? 'interleaved' : '1f1b';
  if (schedule === 'interleaved' && v < 2)
    throw new PipelineSettingError('vpp', `the interleaved schedule needs v ≥ 2 model chunks per stage (got ${v}).`);
  if (schedule !== 'interleaved' && v > 1)
    throw new PipelineSettingError(
      'vpp',
      `the ${schedule} schedule runs one model chunk per stage; v = ${v} needs --schedule interleaved (or leave --vpp out).`,
    );
  const world = layer.tp * p * d;
  if (world > maxMeshRanks)
    throw new PipelineSettingError(
      'dp',
      `tp ${layer.tp} × pp ${p} × dp ${d} = ${world} ranks, more than the ${maxMeshRanks} allowed here (one worker with its own GPUDevice per rank, one shared-memory ring serves at most ${maxMeshRanks}); with tp ${layer.tp} and pp ${p}, dp may be ${legal((x) => layer.tp * p * x <= maxMeshRanks && maxMeshRanks % x === 0, 1, 5, maxMeshRanks).replace(', …', '')}.`,
    );
  const L = whole('layers', raw.layers, Math.ceil(8 / (p * v)) * p * v);
  try {
    splitLayers(L, p, v);
  } catch (e) {
    throw new PipelineSettingError(
      'layers',
      `${(e as Error).message} Megatron builds L/p layers per stage and L/(p·v) per virtual stage (get_num_layers_to_build): legal L for p ${p} × v ${v}: ${legal((x) => x % (p * v) === 0)}.`,
    );
  }
  const b = layer.b;
  let m: number;
  let G: number;
  if (raw.globalBatch !== undefined) {
    G = whole('globalBatch', raw.globalBatch, 1);
    if (G % (b * d) !== 0)
      throw new PipelineSettingError(
        'globalBatch',
        `the global batch G = ${G} sequences must be divisible by micro-batch size × data-parallel size, b·d = ${b}·${d} = ${b * d} (Megatron: m = G/(b·d) micro-batches per replica); legal G: ${legal((x) => x % (b * d) === 0)}.`,
      );
    m = whole('microBatches', raw.microBatches, G / (b * d));
    if (m * b * d !== G)
      throw new PipelineSettingError(
        'microBatches',
        `m = ${m} micro-batches of b = ${b} on d = ${d} replicas make a global batch of ${m * b * d}, not --global-batch ${G}; leave one of them out, or write m = ${G / (b * d)}.`,
      );
  } else {
    m = whole('microBatches', raw.microBatches, 2 * p);
    G = m * b * d;
  }
  if (schedule === 'interleaved') {
    const refused = interleavedRule(p, m);
    if (refused) throw new PipelineSettingError('microBatches', refused);
  }
  if (!(layer.vocab > 0))
    throw new PipelineSettingError(
      'layers',
      'a pipeline needs a vocabulary (--vocab > 0): the first stage embeds tokens, the last computes the loss.',
    );
  return {
    model: { layer, layers: L, p, v, m, schedule },
    dp: d,
    sync: raw.distributedOptimizer ? 'distributed-optimizer' : 'all-reduce',
    globalBatch: G,
  };
}
