import { PlanBackend, ShapeCollectives, type ShapeTensor } from './backend-plan.ts';
import type { LayerConfig } from './config.ts';
import { localDims } from './dims.ts';
import { LayerComm } from './layer-comm.ts';
import { layerStep } from './layer.ts';
import { MemoryRecorder, type StepMemoryRecord } from './memory-record.ts';
import { rankOwnership } from './ownership.ts';
import { assertValid } from './validate.ts';
import { shardLayout, weightsOf, type WeightSet } from './weights.ts';

/**
 * Rank r's buffers over one step, from the layer's own code run on shapes (the plan backend):
 * the same allocations, releases and reads the GPU ranks make, without a GPU and without staging.
 */
export async function replayStepMemory(c: LayerConfig, rank: number): Promise<StepMemoryRecord> {
  assertValid(c);
  const own = rankOwnership(c)[rank];
  if (!own) throw new Error(`replayStepMemory: rank ${rank} is not in 0..${c.tp - 1}.`);
  const plan = new PlanBackend();
  const rec = new MemoryRecorder<ShapeTensor>(
    (t) => t.shape,
    (t) => t.name,
  );
  const lc = new LayerComm(
    rec.comm(new ShapeCollectives(rank, c.tp, plan)),
    (t: ShapeTensor) => t.shape,
    (named) => {
      plan.pending = named;
      rec.collective(named);
    },
  );
  const be = rec.backend(plan);
  const D = localDims(c);
  const w: WeightSet<ShapeTensor> = {};
  for (const name of weightsOf(c)) w[name] = plan.tensor(name, shardLayout(c, D, own, name).shape);
  rec.weights(w);
  const tokens = c.s * c.b;
  const inputs =
    c.vocab > 0
      ? { ids: new Float32Array(tokens), targets: new Float32Array(tokens) }
      : { x: new Float32Array(tokens * c.h), dy: new Float32Array(tokens * c.h) };
  return rec.finish(rank, await layerStep(be, lc, c, own, w, inputs));
}
