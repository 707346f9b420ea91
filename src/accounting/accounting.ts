import type { CollectiveOp } from '../comm/collectives.ts';
import { passOf, type LayerPlan, type OpPhase, type PlannedOp, type StepPass } from '../parallel/plan-types.ts';
import { activationBytes, activationTerms, type ActivationTerm } from './activations.ts';
import { collectiveTimeUs, type Interconnect } from '../hardware/interconnect.ts';
import { parameterShards, type ParameterShard } from './parameters.ts';

/** A number per phase and their sum. */
export interface PhaseTotals {
  readonly forward: number;
  readonly backward: number;
  readonly total: number;
}

/** One rank's memory in bytes (float32): weights, their gradients, activations kept for backward. */
export interface RankMemory {
  readonly rank: number;
  readonly parameterBytes: number;
  /** = parameterBytes: one float32 gradient per local weight element. */
  readonly gradientBytes: number;
  readonly activationBytes: number;
  readonly totalBytes: number;
  readonly parameters: readonly ParameterShard[];
  readonly activations: readonly ActivationTerm[];
}

/** One collective of the plan as the ring model sees it (bytes per rank; every rank issues it). */
export interface CollectiveCost {
  readonly index: number;
  readonly phase: OpPhase;
  readonly name: string;
  readonly op: CollectiveOp;
  readonly mapping: string;
  readonly groupSize: number;
  /** S in the nccl-tests convention (all-reduce buffer, reduce-scatter input, all-gather output). */
  readonly payloadBytes: number;
  /** Bytes this rank sends on the ring: busFactor(op, t)·S. */
  readonly ringBytesSent: number;
  /** Modeled time (µs) on the given interconnect; absent when none was given. */
  readonly modeledUs?: number;
}

/** Count, payload and ring bytes of a set of collectives. */
export interface CommTotals {
  readonly count: number;
  readonly payloadBytes: number;
  readonly ringBytesSent: number;
  readonly modeledUs?: number;
}

/** Communication per phase, and per collective op within each phase. */
export interface CommByPhase {
  readonly forward: CommTotals;
  readonly backward: CommTotals;
  readonly total: CommTotals;
  readonly byOp: Readonly<Record<StepPass, Partial<Record<CollectiveOp, CommTotals>>>>;
}

/** Everything the page and the CLI print per rank, from one plan. */
export interface PlanAccounting {
  /** FLOPs of one rank (every rank runs the same op list): all ops, and GEMMs only. */
  readonly flops: PhaseTotals;
  readonly gemmFlops: PhaseTotals;
  readonly memory: readonly RankMemory[];
  readonly collectives: readonly CollectiveCost[];
  readonly comm: CommByPhase;
}

/** Σ op.flops per phase over the ops that pass `keep`. */
export function flopTotals(ops: readonly PlannedOp[], keep: (op: PlannedOp) => boolean = () => true): PhaseTotals {
  let forward = 0;
  let backward = 0;
  for (const op of ops) {
    if (!keep(op)) continue;
    if (op.phase === 'forward') forward += op.flops;
    else backward += op.flops;
  }
  return { forward, backward, total: forward + backward };
}

/** Parameter, gradient and activation bytes of rank r. */
export function rankMemory(plan: LayerPlan, rank: number): RankMemory {
  const parameters = parameterShards(plan, rank);
  const parameterBytes = parameters.reduce((a, p) => a + p.bytes, 0);
  const activations = activationTerms(plan, rank);
  const act = activationBytes(plan, rank);
  return {
    rank,
    parameterBytes,
    gradientBytes: parameterBytes,
    activationBytes: act,
    totalBytes: 2 * parameterBytes + act,
    parameters,
    activations,
  };
}

/** The plan's collectives in order, with modeled times when `link` is given. */
export function collectiveCosts(plan: LayerPlan, link?: Interconnect): CollectiveCost[] {
  const out: CollectiveCost[] = [];
  for (const op of plan.ops) {
    if (op.kind !== 'collective') continue;
    const c = op.collective;
    out.push({
      index: op.index,
      phase: op.phase,
      name: op.name,
      op: c.op,
      mapping: c.mapping,
      groupSize: c.groupSize,
      payloadBytes: c.payloadBytes,
      ringBytesSent: c.ringBytesSent,
      ...(link ? { modeledUs: collectiveTimeUs(c.op, c.payloadBytes, c.groupSize, link) } : {}),
    });
  }
  return out;
}

function sum(cs: readonly CollectiveCost[], timed: boolean): CommTotals {
  const base = {
    count: cs.length,
    payloadBytes: cs.reduce((a, c) => a + c.payloadBytes, 0),
    ringBytesSent: cs.reduce((a, c) => a + c.ringBytesSent, 0),
  };
  return timed ? { ...base, modeledUs: cs.reduce((a, c) => a + (c.modeledUs ?? 0), 0) } : base;
}

/** Totals of `collectiveCosts` per phase and per (phase, op). */
export function commTotals(costs: readonly CollectiveCost[]): CommByPhase {
  const timed = costs.some((c) => c.modeledUs !== undefined);
  const phase = (p: StepPass): CollectiveCost[] => costs.filter((c) => passOf(c.phase) === p);
  const byOp = (p: StepPass): Partial<Record<CollectiveOp, CommTotals>> => {
    const out: Partial<Record<CollectiveOp, CommTotals>> = {};
    for (const op of new Set(phase(p).map((c) => c.op)))
      out[op] = sum(
        phase(p).filter((c) => c.op === op),
        timed,
      );
    return out;
  };
  return {
    forward: sum(phase('forward'), timed),
    backward: sum(phase('backward'), timed),
    total: sum(costs, timed),
    byOp: { forward: byOp('forward'), backward: byOp('backward') },
  };
}

/** FLOPs, memory per rank and communication of a plan; modeled comm times when `link` is given. */
export function accountPlan(plan: LayerPlan, link?: Interconnect): PlanAccounting {
  const collectives = collectiveCosts(plan, link);
  return {
    flops: flopTotals(plan.ops),
    gemmFlops: flopTotals(plan.ops, (op) => op.kind === 'gemm'),
    memory: plan.ranks.map((r) => rankMemory(plan, r.rank)),
    collectives,
    comm: commTotals(collectives),
  };
}
