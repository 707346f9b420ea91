// The job bundle's command with multi-latent attention, checked by the ported start-up validation (megatron-check.ts).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { jobArgs, type JobSpec } from '../../../src/megatron/job-bundle.ts';
import { checkMegatronLaunch, ngcEnvironment } from '../../../src/megatron/megatron-check.ts';
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
const spec = (groups: number): JobSpec => {
  const s = twoNodeJobSpec.setup;
  return {
    ...twoNodeJobSpec,
    name: 'mla',
    setup: {
      ...s,
      sizes: { ...s.sizes, groups },
      mla: { qLoraRank: 256, kvLoraRank: 128, qkHeadDim: 64, qkPosEmbHeadDim: 32, vHeadDim: 64, qkLayernorm: true },
    },
  };
};

describe("the job's MLA flags", () => {
  it("are flags of the pinned release and pass its checks with multi-head attention; GQA fails naming Megatron's line", () => {
    const heads = twoNodeJobSpec.setup.sizes.heads;
    const { args } = jobArgs(spec(heads));
    for (const f of args.filter((x) => x.startsWith('--'))) expect(known.has(f), f).toBe(true);
    const value = (f: string) => args[args.indexOf(f) + 1];
    expect(args).toContain('--multi-latent-attention');
    expect([value('--q-lora-rank'), value('--kv-lora-rank'), value('--qk-head-dim'), value('--v-head-dim')]).toEqual([
      '256',
      '128',
      '64',
      '64',
    ]);
    expect(checkMegatronLaunch(args, env).map((f) => f.source)).toEqual([]);
    expect(heads % 2).toBe(0);
    expect(checkMegatronLaunch(jobArgs(spec(heads / 2)).args, env).map((f) => f.source)).toContain(
      'megatron/training/arguments.py:1892-1893',
    );
  });
});
