// Run by node-ranks.test.ts as a user runs the Node benchmarks (`npx tsx …`, so that Dawn can run
// itself again with SwiftShader's Vulkan driver where the system has none): rank worker threads in
// Node (scripts/device/node-ranks.ts), each with its own Dawn GPUDevice, run every collective case on host
// and on GPU data at each degree given; prints, as JSON, each result's shape and its largest
// difference from the in-process reference, the trace events' phases and how the pools ended; then
// how a pool of workers that throw, or exit, as they load fails.
import { hostTensor } from '../../../src/comm/host-tensor.ts';
import { referenceCollective } from '../../../src/comm/reference.ts';
import { numel } from '../../../src/core/shape.ts';
import { randomArray } from '../../../src/reference/random.ts';
import { dawnAdapterOrRerun } from '../../../scripts/device/dawn-node.ts';
import { collectiveCases, maxAbsDiff } from '../../collective-cases.ts';

/** What the run prints. */
export interface NodeRanksCheck {
  /** Which Vulkan loader and driver Dawn used. */
  readonly note: string;
  readonly results: {
    readonly t: number;
    readonly device: 'cpu' | 'gpu';
    readonly op: string;
    readonly shape: readonly number[];
    readonly rank: number;
    readonly got: readonly number[];
    readonly want: readonly number[];
    readonly diff: number;
  }[];
  readonly pools: {
    readonly t: number;
    readonly adapters: readonly string[];
    readonly phases: { readonly device: string | undefined; readonly names: string[] }[];
    readonly deviceLost: readonly string[];
  }[];
  /** A t = 2 pool whose workers throw, or exit, as they load: how its creation failed. */
  readonly faults: { readonly worker: string; readonly error: string }[];
}

const degrees = process.argv.slice(2).map(Number);
const { note } = await dawnAdapterOrRerun();
const { createCommPool } = await import('../../../src/session/pools.ts');
const { nodeRankWorker } = await import('../../../scripts/device/node-ranks.ts');

const results: NodeRanksCheck['results'] = [];
const pools: NodeRanksCheck['pools'] = [];
for (const t of degrees) {
  const pool = await createCommPool(t, 'sab-ring', 10_000, 1 << 20, nodeRankWorker);
  for (const device of ['cpu', 'gpu'] as const)
    for (const [i, c] of collectiveCases(t).entries()) {
      const inputs = Array.from({ length: t }, (_, r) =>
        hostTensor(c.shape, randomArray(numel(c.shape), 100 * i + r + 1)),
      );
      // Dawn for Node cannot writeBuffer from shared memory: GPU results come up through mapped buffers.
      const ys = await pool.run('collective', (r) => ({
        ...c,
        device,
        data: inputs[r].data,
        gpu: { upload: 'mapped' },
      }));
      const want = referenceCollective({ seq: 0, dtype: 'f32', ...c }, inputs);
      ys.forEach((y, r) =>
        results.push({
          t,
          device,
          op: c.op,
          shape: c.shape,
          rank: r,
          got: y.shape,
          want: want[r].shape,
          diff: maxAbsDiff(y.data, want[r].data),
        }),
      );
    }
  const events = await pool.traces();
  pools.push({
    t,
    adapters: pool.adapters,
    phases: events.map((e) => ({ device: e.comm?.device, names: e.phases.map((p) => p.name) })),
    deviceLost: (await pool.dispose()).deviceLost,
  });
}
const faults: NodeRanksCheck['faults'] = [];
for (const worker of ['node-throw.worker.ts', 'node-exit.worker.ts']) {
  const entry = new URL(`./${worker}`, import.meta.url);
  const error = await createCommPool(2, 'sab-ring', 10_000, 1 << 16, (r) => nodeRankWorker(r, entry)).then(
    async (pool) => (await pool.dispose(), 'the pool started'),
    (e: Error) => e.message,
  );
  faults.push({ worker, error });
}
console.log(JSON.stringify({ note, results, pools, faults } satisfies NodeRanksCheck));
process.exit(0);
