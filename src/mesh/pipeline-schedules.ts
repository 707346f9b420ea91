/**
 * The order in which each pipeline stage runs its passes, per schedule; pure (no timing: the
 * projection's simulation, projection/pipeline/pipeline-schedule.ts, and the ranks' executor,
 * parallel/pipeline-step.ts, both run these lists).
 *
 * p stages, v model chunks per stage (chunk c of stage i is virtual stage c·p + i), m micro-batches.
 * A pass is F (forward), B (backward) or W (weight gradient). A schedule without W passes runs
 * each B as the whole backward (input and weight gradients); ZB-H1 splits it into B (the input
 * gradient, which the previous stage waits for) and W (the weight gradients, which nobody waits for).
 *
 * - afab (GPipe; torch.distributed.pipelining ScheduleGPipe): every forward, then every backward,
 *   micro-batches in order on both.
 * - 1f1b (Megatron-Core forward_backward_pipelining_without_interleaving,
 *   megatron/core/pipeline_parallel/schedules.py, core_v0.19.0): W = min(p − i − 1, m) warm-up
 *   forwards, m − W pairs (F, B), W cool-down backwards.
 * - interleaved (forward_backward_pipelining_with_interleaving): the m·v virtual micro-batches in
 *   get_schedule_table's order with microbatch_group_size_per_vp_stage g = p (Megatron-LM's default:
 *   chunk 0 of micro-batches 0..g−1, chunk 1 of the same, …, then the next group); backward walks the
 *   same table with chunk v − 1 − c; warm-up min((p − i − 1)·2 + (v − 1)·g, m·v) forwards
 *   (get_pp_rank_microbatches). Megatron's rule on m: see interleavedRule.
 * - zb-h1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", §3.1 and Fig. 3): at step x = 0, 1, …,
 *   m + p − 2 stage i runs F_x, then B_{x − (p − 1 − i)}, then W_{x − (p − 1)}, each only if its
 *   micro-batch is in [0, m). The F/B part is exactly 1F1B's (same warm-up, same in-flight
 *   activations; what W reads is held besides, for up to i + 1 backwards on stage i, see
 *   mesh/pipeline-memory.ts); each W trails its B by i steps, so stage i
 *   enters the cool-down with i weight gradients left, which fill the idle time 1F1B leaves there.
 */
export const pipelineScheduleNames = ['afab', '1f1b', 'interleaved', 'zb-h1'] as const;

/** A pipeline schedule by name (the CLI's and page's --schedule). */
export type PipelineScheduleName = (typeof pipelineScheduleNames)[number];

/** F: forward; B: backward (the input gradient; with no W in the schedule, the whole backward); W: weight gradients. */
export type PipelinePass = 'F' | 'B' | 'W';

/** One pass of one micro-batch through one model chunk of a stage. */
export interface ScheduledPass {
  readonly pass: PipelinePass;
  readonly microBatch: number;
  readonly chunk: number;
}

/** The degrees of a pipeline: p stages, v chunks per stage, m micro-batches. */
export interface PipelineDegrees {
  readonly p: number;
  readonly v: number;
  readonly m: number;
}

/** Whether the schedule splits each backward into B and W passes. */
export const splitsBackward = (s: PipelineScheduleName): boolean => s === 'zb-h1';

/**
 * Megatron's rule on m for the interleaved schedule (forward_backward_pipelining_with_interleaving,
 * core_v0.19.0): the group size g (here g = p) must lie in [p, m], and m mod g must be 0 or ≥ p.
 * With g = p: m a multiple of p, at least p. Returns the refusal, or undefined when m is legal.
 */
export function interleavedRule(p: number, m: number): string | undefined {
  if (m >= p && m % p === 0) return undefined;
  const legal = [1, 2, 3, 4].map((k) => k * p).join(', ');
  const why =
    m < p
      ? `the number of contiguous micro-batches in a virtual pipeline stage (microbatch_group_size_per_vp_stage = p = ${p}) must lie in [p, m], and m = ${m} < p`
      : `m mod p = ${m % p}: the last group of micro-batches must be whole (Megatron: "the remainder of M divided by N should be 0, or larger than or equal to the pipeline-parallel size", else dependency bubbles)`;
  return `the interleaved schedule needs m to be a multiple of p = ${p}: ${why}. Legal m: ${legal}, …`;
}

/** Refuses degrees no schedule can run, naming what to write instead. */
function checkDegrees(schedule: PipelineScheduleName, { p, v, m }: PipelineDegrees): void {
  for (const [k, x] of [
    ['p', p],
    ['v', v],
    ['m', m],
  ] as const)
    if (!(Number.isInteger(x) && x >= 1)) throw new Error(`pipeline ${k} must be a whole number ≥ 1 (got ${x}).`);
  if (schedule === 'interleaved') {
    if (v < 2)
      throw new Error(
        `the interleaved schedule needs v ≥ 2 model chunks per stage (got v = ${v}); with v = 1 use 1f1b.`,
      );
    const refused = interleavedRule(p, m);
    if (refused) throw new Error(refused);
  } else if (v !== 1) {
    throw new Error(
      `the ${schedule} schedule runs one model chunk per stage (v = 1, got v = ${v}); v ≥ 2 is the interleaved schedule.`,
    );
  }
}

/** Megatron's get_schedule_table: (micro-batch, chunk) per virtual micro-batch, in groups of g micro-batches. */
export function scheduleTable(m: number, v: number, g: number): { microBatch: number; chunk: number }[] {
  const out: { microBatch: number; chunk: number }[] = [];
  for (let lo = 0; lo < m; lo += g) {
    const hi = lo + g >= m ? m : lo + g;
    for (let c = 0; c < v; c++) for (let j = lo; j < hi; j++) out.push({ microBatch: j, chunk: c });
  }
  return out;
}

/** Megatron's warm-up then 1F1B pairs then cool-down over the schedule table (v = 1: plain 1F1B). */
function megatronOrder(p: number, v: number, m: number, stage: number): ScheduledPass[] {
  const table = scheduleTable(m, v, p);
  const total = m * v;
  const warm = Math.min(total, v === 1 ? p - stage - 1 : (p - stage - 1) * 2 + (v - 1) * p);
  const out: ScheduledPass[] = [];
  const fwd = (k: number) => out.push({ pass: 'F', ...table[k]! });
  const bwd = (k: number) => out.push({ pass: 'B', microBatch: table[k]!.microBatch, chunk: v - 1 - table[k]!.chunk });
  for (let k = 0; k < warm; k++) fwd(k);
  for (let k = 0; k < total - warm; k++) {
    fwd(k + warm);
    bwd(k);
  }
  for (let k = total - warm; k < total; k++) bwd(k);
  return out;
}

function zbH1Order(p: number, m: number, stage: number): ScheduledPass[] {
  const out: ScheduledPass[] = [];
  const put = (pass: PipelinePass, mb: number) => {
    if (mb >= 0 && mb < m) out.push({ pass, microBatch: mb, chunk: 0 });
  };
  for (let x = 0; x < m + p - 1; x++) {
    put('F', x);
    put('B', x - (p - 1 - stage));
    put('W', x - (p - 1));
  }
  return out;
}

/** Stage `stage`'s passes in execution order; throws naming the rule when the degrees do not fit the schedule. */
export function stagePasses(schedule: PipelineScheduleName, d: PipelineDegrees, stage: number): ScheduledPass[] {
  checkDegrees(schedule, d);
  const { p, v, m } = d;
  if (!(Number.isInteger(stage) && stage >= 0 && stage < p))
    throw new Error(`stage ${stage} is not one of the pipeline's stages 0…${p - 1}.`);
  switch (schedule) {
    case 'afab':
      return [
        ...Array.from({ length: m }, (_, j): ScheduledPass => ({ pass: 'F', microBatch: j, chunk: 0 })),
        ...Array.from({ length: m }, (_, j): ScheduledPass => ({ pass: 'B', microBatch: j, chunk: 0 })),
      ];
    case '1f1b':
    case 'interleaved':
      return megatronOrder(p, v, m, stage);
    case 'zb-h1':
      return zbH1Order(p, m, stage);
  }
}

/** Every stage's passes: [stage][k]. */
export function pipelinePasses(schedule: PipelineScheduleName, d: PipelineDegrees): ScheduledPass[][] {
  return Array.from({ length: d.p }, (_, i) => stagePasses(schedule, d, i));
}

/** "F0 F1 B0 W0 …" (chunk shown as F0.1 when v > 1): how the tests and docs write an order. */
export function formatPasses(passes: readonly ScheduledPass[], v = 1): string {
  return passes.map((x) => `${x.pass}${x.microBatch}${v > 1 ? `.${x.chunk}` : ''}`).join(' ');
}
