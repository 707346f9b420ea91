import { quoted } from '../core/quote.ts';
import { checkMeshLayout, type MeshField, type MeshLayout } from '../mesh/mesh-check.ts';
import { pipelineScheduleNames, type PipelineScheduleName } from '../mesh/pipeline-schedules.ts';
import type { LayerConfig } from './config.ts';
import type { DpSyncMode } from './dp-options.ts';
import type { PipelineModel } from './pipeline-model.ts';

/** The CLI flag of each mesh setting (`npm run sweep`); mesh/mesh-check.ts names them as the page does. */
export const meshFlags: Readonly<Record<MeshField, string>> = {
  tp: '--tp',
  pp: '--pp',
  vpp: '--vpp',
  dp: '--dp',
  m: '--micro-batches',
  schedule: '--schedule',
  layers: '--layers',
  b: '--b',
  gbatch: '--global-batch',
  vocab: '--vocab',
};

/** A refused setting: which one caused it (where a page shows the message) and the message (rule and legal values). */
export class PipelineSettingError extends Error {
  override readonly name = 'PipelineSettingError';
  constructor(
    readonly field: MeshField,
    message: string,
  ) {
    super(`${meshFlags[field]}: ${message}`);
  }
}

/** The settings as text (absent: the default). */
export type PipelineRawSettings = Partial<
  Record<'pp' | 'vpp' | 'dp' | 'm' | 'schedule' | 'layers' | 'gbatch', string>
> & {
  readonly distributedOptimizer?: boolean;
};

/** A pipeline run the ranks can do: the model, d replicas and their sync, the global batch in sequences (b·m·d). */
export interface PipelineSettings {
  readonly model: PipelineModel;
  readonly dp: number;
  readonly sync: DpSyncMode;
  readonly globalBatch: number;
}

function whole(field: MeshField, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const v = Number(text);
  if (!/^\s*\d+\s*$/.test(text) || !Number.isSafeInteger(v) || v < 1)
    throw new PipelineSettingError(field, `must be a whole number ≥ 1, got ${quoted(text)}.`);
  return v;
}

/**
 * The pipeline run of `raw` on top of one block's layer `layer` (its t, b and vocabulary), checked
 * by the mesh's rules (mesh/mesh-check.ts checkMeshLayout, the page's): the first refusal is thrown
 * as a PipelineSettingError naming the setting, the rule and the legal values. Defaults: p, v, d 1;
 * schedule 1f1b (interleaved when v > 1; --schedule interleaved alone takes v = 2); m = 2·p, or
 * G/(b·d) when only the global batch G is given; L the smallest multiple of p·v that is ≥ 8.
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
  const L = whole('layers', raw.layers, Math.ceil(8 / (p * v)) * p * v);
  const G = raw.gbatch === undefined ? undefined : whole('gbatch', raw.gbatch, 1);
  const fromG = G !== undefined && G % (layer.b * d) === 0 ? G / (layer.b * d) : undefined;
  const m = whole('m', raw.m, fromG ?? 2 * p);
  const layout: MeshLayout = {
    tp: layer.tp,
    pp: p,
    vpp: v,
    dp: d,
    m,
    schedule,
    layers: L,
    b: layer.b,
    gbatch: G ?? 'auto',
    vocab: layer.vocab,
  };
  const [issue] = checkMeshLayout(layout);
  if (issue) throw new PipelineSettingError(issue.field, issue.message);
  return {
    model: { layer, layers: L, p, v, m, schedule },
    dp: d,
    sync: raw.distributedOptimizer ? 'distributed-optimizer' : 'all-reduce',
    globalBatch: G ?? m * layer.b * d,
  };
}
