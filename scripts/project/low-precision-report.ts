// `npm run project`'s lines on the linear layers' weights under an fp8 or fp4 recipe: their casts per
// step, the DP collectives with the parameter all-gather's bytes per parameter, the amax all-reduce.
import { linearRecipeOf } from '../../src/projection/layer/kernel-options.ts';
import type { StepProjection } from '../../src/projection/step/cluster-projection.ts';

/** The weights' line for a step at t = `tp` (none in the training dtype). */
export function lowPrecisionLines(tp: number, step: StepProjection): string[] {
  const w = step.weightCast;
  if (!w) return [];
  const kernels = step.machine.kernels;
  const recipe = kernels ? linearRecipeOf(kernels) : undefined;
  const quantized = step.setup.fp8ParamGather || step.setup.fp4ParamGather;
  const ms = (x: number): string => `${x.toFixed(2)} ms`;
  const c = step.dpCommMs;
  return [
    `weights at t=${tp} (${recipe ?? 'low precision'}${quantized ? ', quantized parameters' : ''}): casts ${ms(w.castMs)} per step ` +
      `(${(w.castBytes / 2 ** 30).toFixed(2)} GiB through HBM)${quantized ? `, amax all-reduce ${ms(w.amaxReduceMs)}` : ''}; ` +
      `DP per step, hidden or not: gradient sync ${ms(c.gradMs)}` +
      (c.paramGatherMs > 0
        ? `, parameter all-gather ${ms(c.paramGatherMs)} at ${c.paramGatherBytesPerParam.toFixed(2)} B/parameter`
        : ''),
  ];
}
