import { PlanBackend, ShapeCollectives, type ShapeTensor } from './backend-plan.ts';
import type { LayerConfig } from './config.ts';
import { LayerComm } from './layer-comm.ts';
import { layerStep } from './layer.ts';
import { paddedVocab, rankOwnership } from './ownership.ts';
import type { LayerPlan } from './plan-types.ts';
import type { GemmProblem } from '../reference/gemm.ts';
import { assertValid } from './validate.ts';
import { shardLayout, weightsOf, type WeightSet } from './weights.ts';
import { localDims } from './dims.ts';

/** A plan and the strided GEMM problems of its ops (for the GEMM tuner). */
export interface PlanWithProblems {
  readonly plan: LayerPlan;
  readonly gemmProblems: readonly GemmProblem[];
}

/**
 * The plan of a configuration, made by running the layer's own code on shapes (rank 0; every
 * rank runs the same ops on the same local shapes). Validates first: an illegal configuration
 * throws before anything is planned.
 */
export async function makePlan(c: LayerConfig): Promise<PlanWithProblems> {
  assertValid(c);
  return planValidated(c);
}

/**
 * makePlan for a configuration that validateConfig has already passed (the page checks once per
 * run, then plans): plans without validating again. An unchecked configuration gives undefined shapes.
 */
export async function planValidated(c: LayerConfig): Promise<PlanWithProblems> {
  const owners = rankOwnership(c);
  const be = new PlanBackend();
  const comm = new ShapeCollectives(0, c.tp, be);
  const lc = new LayerComm(
    comm,
    (t: ShapeTensor) => t.shape,
    (named) => {
      be.pending = named;
    },
  );
  const D = localDims(c);
  const w: WeightSet<ShapeTensor> = {};
  for (const name of weightsOf(c)) w[name] = be.tensor(name, shardLayout(c, D, owners[0], name).shape);
  const tokens = c.s * c.b;
  // The plan backend keeps shapes only: the [s, b, h] input and upstream gradient are never
  // read, so they are empty (a 1.7B model's s·b·h floats cost 0.3 s to copy for nothing).
  const inputs =
    c.vocab > 0
      ? { ids: new Float32Array(tokens), targets: new Float32Array(tokens) }
      : { x: new Float32Array(0), dy: new Float32Array(0) };
  await layerStep(be, lc, c, owners[0], w, inputs);
  return {
    plan: { config: c, paddedVocab: paddedVocab(c), ranks: owners, ops: be.ops },
    gemmProblems: be.gemmProblems,
  };
}
