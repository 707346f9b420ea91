// Paths of the hand-written Kineto fixtures and a loader through the CLI's Node edge (fs + zlib).
import { fileURLToPath } from 'node:url';
import { readTraceFile } from '../../../scripts/trace/trace-files.ts';
import { assembleJob } from '../../../src/kineto/kineto-job.ts';
import type { MeasuredTrace } from '../../../src/kineto/kineto-types.ts';
import { systems } from '../../../src/hardware/systems.ts';
import type { JobSpec } from '../../../src/megatron/job-bundle.ts';
import { presets } from '../../../src/parallel/config.ts';

/** Absolute path of a fixture in tests/fixtures/kineto/. */
export const fixture = (name: string): string =>
  fileURLToPath(new URL(`../../fixtures/kineto/${name}`, import.meta.url));

/** The job of the named fixtures, read as the CLI reads them. */
export async function loadJob(...names: string[]): Promise<MeasuredTrace> {
  return assembleJob(await Promise.all(names.map((n) => readTraceFile(fixture(n)))));
}

/** The job the tp2 fixtures stand for, as a job bundle's spec: t = 2 on 2 H100s, 2 layers, bf16. */
export const tp2JobSpec: JobSpec = {
  name: 'tp2-h100',
  setup: {
    sizes: { s: 512, b: 1, h: 1024, heads: 16, groups: 16, ffn: 2816, vocab: 0 },
    tp: 2,
    sp: false,
    layers: 2,
    gpus: 2,
    globalBatch: 1,
    overlap: true,
  },
  dtype: 'bf16',
  system: 'dgx-h100',
  gpusPerNode: 8,
};

/** A 2-node H100 job: t = 8 with SP and full recompute, DP 2 (16 GPUs), 4 layers, bf16. */
export const twoNodeJobSpec: JobSpec = {
  name: 'llama-gqa-2x8',
  setup: {
    sizes: { ...presets['llama-gqa'], s: 2048, b: 2, h: 2048, heads: 16, groups: 8, ffn: 5632, vocab: 50304 },
    tp: 8,
    sp: true,
    layers: 4,
    gpus: 16,
    globalBatch: 32,
    overlap: true,
    recompute: true,
  },
  dtype: 'bf16',
  system: 'dgx-h100',
  gpusPerNode: systems['dgx-h100'].gpusPerNode,
};
