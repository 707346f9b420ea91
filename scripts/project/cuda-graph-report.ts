// The CLI's line on what CUDA graphs hold per pipeline stage (src/projection/step/cuda-graph-memory.ts).
import type { CudaGraphStage } from '../../src/projection/step/cuda-graph-memory.ts';

const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/** "t T: CUDA graphs (impl): …" — graphs captured and static buffers per stage. */
export function cudaGraphLine(tp: number, stages: readonly CudaGraphStage[]): string {
  const impl = stages[0]!.impl;
  const per = stages
    .map((g, i) => {
      const resident = g.resident.reduce((a, r) => a + r.bytes, 0);
      const held =
        impl === 'local'
          ? `${mib(g.keptPerMicroBatch(0))} input copy per micro-batch in flight`
          : `${mib(resident)} static buffers${impl === 'transformer_engine' ? ` (${g.staticSets} input sets)` : ''}`;
      return `${stages.length > 1 ? `stage ${i}: ` : ''}${g.graphs} graph${g.graphs === 1 ? '' : 's'}, ${held}`;
    })
    .join('; ');
  return `t ${tp}: CUDA graphs (${impl}, in the memory/GPU column): ${per}`;
}
