import { describe, expect, it } from 'vitest';
import { paramGatherDispatchOf } from '../../../src/megatron/megatron-release.ts';
import { publishedRuns } from '../../../src/megatron/published-runs.ts';

describe('Megatron-Core releases', () => {
  it('core_r0.8 dispatches the first parameter gather at the step start, core_v0.19 at the first forward', () => {
    expect(paramGatherDispatchOf('core_r0.8')).toBe('step-start');
    expect(paramGatherDispatchOf('core_v0.19')).toBe('first-forward');
  });

  it('the README H100 runs (committed 2024-07-15) carry core_r0.8, with the reason; the 2021 runs none', () => {
    const h100 = publishedRuns.filter((r) => r.id.startsWith('megatron-h100'));
    expect(h100.length).toBe(9);
    for (const r of h100) {
      expect(r.release?.megatronRelease, r.id).toBe('core_r0.8');
      expect(r.release?.why, r.id).toMatch(/Megatron-Core r0\.8\.0.*2024-07-15/);
    }
    for (const r of publishedRuns.filter((x) => x.id.startsWith('narayanan21')))
      expect(r.release, r.id).toBeUndefined();
  });
});
