import type { HostTensor } from '../comm/host-tensor.ts';
import { createInProcessGroup } from '../comm/in-process.ts';
import { CpuBackend } from './backend-cpu.ts';
import type { LayerConfig } from './config.ts';
import { gatherLogical, type LogicalOutput, type RankOutput } from './gather.ts';
import { LayerComm } from './layer-comm.ts';
import { layerStep, type StepInputs } from './layer.ts';
import { rankOwnership } from './ownership.ts';
import { rankWeightArrays, uploadWeights } from './step-data.ts';
import { assertValid } from './validate.ts';
import type { WeightSet } from './weights.ts';

/** A rank's results read back to host arrays. */
export async function readRankOutput<T>(
  rank: number,
  read: (t: T) => Promise<Float32Array>,
  r: { y: T; loss?: T; dx?: T; grads: WeightSet<T> },
): Promise<RankOutput> {
  // All reads in flight at once: on the GPU ranks each is a round trip through the browser's GPU
  // process, and issued together they share it instead of queueing one after another.
  const entries = Object.entries(r.grads) as [keyof WeightSet<T>, T][];
  const [y, loss, dx, gs] = await Promise.all([
    read(r.y),
    r.loss && read(r.loss),
    r.dx && read(r.dx),
    Promise.all(entries.map(([, g]) => read(g))),
  ]);
  const grads: RankOutput['grads'] = {};
  entries.forEach(([name], i) => (grads[name] = gs[i]));
  return { rank, y, loss, dx, grads };
}

/**
 * Runs one step of `c` on t ranks in this thread: the CPU twins as kernels and the in-process
 * communicator (the reference semantics of the collectives). Pure TS: Node tests use it, and it
 * is a second oracle for the GPU runs.
 */
export async function runInProcess(c: LayerConfig, inputs: StepInputs): Promise<LogicalOutput> {
  assertValid(c);
  const owners = rankOwnership(c);
  const group = createInProcessGroup(c.tp);
  const outs = await Promise.all(
    owners.map(async (own) => {
      const be = new CpuBackend();
      const w = uploadWeights(rankWeightArrays(c, own), (n, shape, data) => be.tensor(n, shape, data));
      const lc = new LayerComm(group[own.rank], (t: HostTensor) => t.shape);
      const r = await layerStep(be, lc, c, own, w, inputs);
      return readRankOutput(own.rank, (t: HostTensor) => be.read(t), r);
    }),
  );
  return gatherLogical(c, owners, outs);
}
