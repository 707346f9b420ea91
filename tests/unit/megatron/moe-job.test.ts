// The job bundle's command with MoE flags, checked by the ported start-up validation (megatron-check.ts).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { jobArgs, type JobSpec } from '../../../src/megatron/job-bundle.ts';
import { checkMegatronLaunch, ngcEnvironment } from '../../../src/megatron/megatron-check.ts';
import { moeDefaults, type MoeSetup } from '../../../src/megatron/moe.ts';
import { twoNodeJobSpec } from '../kineto/kineto-fixtures.ts';

/** Every flag of the pinned release (tests/fixtures/megatron-flags.json). */
const known = new Set(
  (
    JSON.parse(readFileSync(new URL('../../fixtures/megatron-flags.json', import.meta.url), 'utf8')) as {
      flags: string[];
    }
  ).flags,
);
const env = ngcEnvironment(16, { CUDA_DEVICE_MAX_CONNECTIONS: '1' }, 9);
const moe = (m: Partial<MoeSetup>): JobSpec => ({
  ...twoNodeJobSpec,
  name: 'moe',
  setup: {
    ...twoNodeJobSpec.setup,
    moe: { ...moeDefaults(16, 5632), topk: 4, ep: 2, dispatcher: 'alltoall', groupedGemm: true, ...m },
  },
});
const sources = (spec: JobSpec): string[] => checkMegatronLaunch(jobArgs(spec).args, env).map((f) => f.source);

describe("the job's MoE flags", () => {
  it("are flags of the pinned release, in Megatron's spelling, and pass its MoE checks", () => {
    const { args } = jobArgs(moe({ auxLossCoeff: 1e-2 }));
    for (const f of args.filter((x) => x.startsWith('--'))) expect(known.has(f), f).toBe(true);
    const value = (f: string) => args[args.indexOf(f) + 1];
    expect(value('--num-experts')).toBe('16');
    expect(value('--moe-router-topk')).toBe('4');
    expect(value('--expert-model-parallel-size')).toBe('2');
    expect(value('--moe-token-dispatcher-type')).toBe('alltoall');
    expect(value('--moe-aux-loss-coeff')).toBe('0.01');
    expect(args).toContain('--moe-grouped-gemm');
    expect(sources(moe({}))).toEqual([]);
  });
  it('fail the check where Megatron refuses them, naming the line', () => {
    expect(sources(moe({ ep: 3 }))).toContain('megatron/training/arguments.py:1602-1603');
    // t = 8 on 16 GPUs: ETP (= t) · EP 4 · p 1 = 32 does not divide 16.
    expect(sources(moe({ ep: 4 }))).toContain('megatron/core/parallel_state.py:881-883');
    expect(sources(moe({ overlapEpComm: true, dispatcher: 'allgather' }))).toContain(
      'megatron/core/transformer/transformer_config.py:2683-2686',
    );
    const v100 = ngcEnvironment(16, { CUDA_DEVICE_MAX_CONNECTIONS: '1' }, 7);
    expect(checkMegatronLaunch(jobArgs(moe({})).args, v100).map((f) => f.source)).toContain(
      'megatron/training/arguments.py:1338-1340',
    );
  });
});
