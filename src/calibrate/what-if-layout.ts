// The other layouts a what-if projects: the job's setup with some of its layout changed, written
// as a short spec ("t=2,p=2,mb=2,recompute=full") on the command line or set by the page's controls.
import {
  dataParallel,
  layoutMicroBatches,
  layoutRejection,
  layoutRejectionText,
  type ParallelLayout,
  type RecomputeChoice,
} from '../megatron/parallel-layout.ts';
import { recomputeOf, type TrainingSetup } from '../megatron/training-setup.ts';

/** What a what-if may change: the layout's degrees, micro-batch, recompute and overlaps, and the GPU count (d follows). */
export type LayoutChange = Partial<
  Pick<
    ParallelLayout,
    | 'tp'
    | 'pp'
    | 'vpp'
    | 'cp'
    | 'microBatch'
    | 'sp'
    | 'recompute'
    | 'distributedOptimizer'
    | 'overlapGradReduce'
    | 'overlapParamGather'
  > & { readonly gpus: number }
>;

/** The spec's keys, what each sets, and its kind of value. */
const keys = {
  t: ['tp', 'count'],
  p: ['pp', 'count'],
  v: ['vpp', 'count'],
  cp: ['cp', 'count'],
  mb: ['microBatch', 'count'],
  gpus: ['gpus', 'count'],
  sp: ['sp', 'switch'],
  recompute: ['recompute', 'recompute'],
  'dist-opt': ['distributedOptimizer', 'switch'],
  'overlap-grad': ['overlapGradReduce', 'switch'],
  'overlap-param': ['overlapParamGather', 'switch'],
} as const satisfies Record<string, readonly [keyof LayoutChange, 'count' | 'switch' | 'recompute']>;
type SpecKey = keyof typeof keys;

const recomputes: readonly RecomputeChoice[] = ['none', 'selective', 'full'];

/**
 * A change written `key=value,…`: t, p, v, cp, mb (micro-batch), gpus as whole numbers ≥ 1; sp,
 * dist-opt, overlap-grad, overlap-param as on|off; recompute as none|selective|full. Throws an
 * Error naming the part that does not read and what to write.
 */
export function parseLayoutChange(spec: string): LayoutChange {
  const out: Record<string, number | boolean | RecomputeChoice> = {};
  for (const part of spec.split(',').map((x) => x.trim())) {
    if (!part) continue;
    const [k, v, ...rest] = part.split('=').map((x) => x.trim());
    if (!(k! in keys) || v === undefined || rest.length)
      throw new Error(
        `"${part}" in "${spec}": write key=value with key one of ${Object.keys(keys).join(', ')} (e.g. t=2,p=2,mb=2,recompute=full).`,
      );
    const [field, kind] = keys[k as SpecKey];
    if (kind === 'count') {
      const n = Number(v);
      if (!(Number.isInteger(n) && n >= 1)) throw new Error(`${k} must be a whole number ≥ 1, got "${v}".`);
      out[field] = n;
    } else if (kind === 'switch') {
      if (v !== 'on' && v !== 'off') throw new Error(`${k} is on or off, got "${v}".`);
      out[field] = v === 'on';
    } else {
      if (!recomputes.includes(v as RecomputeChoice))
        throw new Error(`recompute is ${recomputes.join(', ')}, got "${v}".`);
      out[field] = v as RecomputeChoice;
    }
  }
  if (!Object.keys(out).length) throw new Error(`"${spec}" changes nothing: write e.g. t=2 or p=2,v=2.`);
  return out as LayoutChange;
}

/** The layout `setup` runs (tp-comm-overlap is a kernel option, not the setup's). */
export function setupLayout(s: TrainingSetup): ParallelLayout {
  return {
    tp: s.tp,
    pp: s.pp ?? 1,
    vpp: s.vpp ?? 1,
    cp: s.cp ?? 1,
    microBatch: s.sizes.b,
    sp: s.sp,
    recompute: recomputeOf(s)?.granularity ?? 'none',
    distributedOptimizer: s.distributedOptimizer ?? false,
    overlapGradReduce: s.overlapGradReduce ?? false,
    overlapParamGather: s.overlapParamGather ?? false,
    tpCommOverlap: false,
  };
}

/** "t2 p2 v1 cp1 d4 mb1 m8 recompute none" for `s`. */
export function layoutLabel(s: TrainingSetup): string {
  const l = setupLayout(s);
  return `t${l.tp} p${l.pp} v${l.vpp} cp${l.cp} d${dataParallel(l, s.gpus)} mb${l.microBatch} m${layoutMicroBatches(l, s.gpus, s.globalBatch)}${l.sp ? ' sp' : ''} recompute ${l.recompute}`;
}

/**
 * `job` with `change` applied: the same model, global batch, dtype flags and kernels; the layout's
 * degrees, micro-batch, recompute (full: uniform, one layer per checkpoint; selective: core
 * attention) and overlaps as changed. SP is turned off at t = 1 unless the change sets it. Throws
 * the Megatron rule the result breaks (parallel-layout.ts layoutRejection).
 */
export function changedSetup(job: TrainingSetup, change: LayoutChange): TrainingSetup {
  const { gpus = job.gpus, ...over } = change;
  const l: ParallelLayout = { ...setupLayout(job), ...over };
  const layout = change.sp === undefined && l.tp === 1 ? { ...l, sp: false } : l;
  const { b: _b, ...sizes } = job.sizes;
  const broken = layoutRejection(
    { sizes, layers: job.layers, ...(job.moe && { moe: job.moe }) },
    layout,
    gpus,
    job.globalBatch,
  );
  if (broken) throw new Error(`${layoutRejectionText[broken]}.`);
  if (change.recompute === undefined) return { ...job, ...degrees(job, layout, gpus) };
  const { recompute: _r, recomputation: _c, ...rest } = job;
  return {
    ...rest,
    ...degrees(job, layout, gpus),
    ...(layout.recompute === 'full' && { recomputation: { granularity: 'full', method: 'uniform', layers: 1 } }),
    ...(layout.recompute === 'selective' && { recomputation: { granularity: 'selective' } }),
  };
}

/** The setup fields a layout sets on `job`, recompute aside. */
function degrees(
  job: TrainingSetup,
  layout: ParallelLayout,
  gpus: number,
): Pick<
  TrainingSetup,
  | 'sizes'
  | 'tp'
  | 'sp'
  | 'gpus'
  | 'pp'
  | 'vpp'
  | 'cp'
  | 'distributedOptimizer'
  | 'overlapGradReduce'
  | 'overlapParamGather'
> {
  return {
    sizes: { ...job.sizes, b: layout.microBatch },
    tp: layout.tp,
    sp: layout.sp,
    gpus,
    pp: layout.pp,
    vpp: layout.vpp,
    cp: layout.cp,
    distributedOptimizer: layout.distributedOptimizer,
    overlapGradReduce: layout.overlapGradReduce,
    overlapParamGather: layout.overlapParamGather,
  };
}
