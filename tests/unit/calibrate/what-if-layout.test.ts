import { describe, expect, test } from 'vitest';
import { changedSetup, layoutLabel, parseLayoutChange } from '../../../src/calibrate/what-if-layout.ts';
import type { TrainingSetup } from '../../../src/megatron/training-setup.ts';
import { presets } from '../../../src/parallel/config.ts';

const job: TrainingSetup = {
  sizes: { ...presets['llama-gqa'], s: 2048, b: 1, h: 2048, heads: 16, groups: 8, ffn: 5632, vocab: 32000 },
  tp: 4,
  sp: true,
  layers: 8,
  gpus: 8,
  globalBatch: 16,
  overlap: true,
  distributedOptimizer: true,
  flashAttention: true,
};

describe('what-if layouts', () => {
  test('a spec reads every key; bad parts are named with what to write', () => {
    expect(
      parseLayoutChange(
        't=2, p=2,v=2,cp=1,mb=2,gpus=16,sp=off,recompute=selective,dist-opt=on,overlap-grad=on,overlap-param=off',
      ),
    ).toEqual({
      tp: 2,
      pp: 2,
      vpp: 2,
      cp: 1,
      microBatch: 2,
      gpus: 16,
      sp: false,
      recompute: 'selective',
      distributedOptimizer: true,
      overlapGradReduce: true,
      overlapParamGather: false,
    });
    expect(() => parseLayoutChange('tp=2')).toThrow(/"tp=2" in "tp=2": write key=value with key one of t, p/);
    expect(() => parseLayoutChange('t=0')).toThrow('t must be a whole number ≥ 1, got "0".');
    expect(() => parseLayoutChange('sp=yes')).toThrow('sp is on or off, got "yes".');
    expect(() => parseLayoutChange('recompute=all')).toThrow('recompute is none, selective, full, got "all".');
    expect(() => parseLayoutChange(' , ')).toThrow(/changes nothing/);
  });

  test('the change applied: degrees, micro-batch, recompute, GPUs; the rest of the job kept', () => {
    const s = changedSetup(job, { tp: 2, pp: 2, microBatch: 2, recompute: 'full' });
    expect(s).toEqual({
      ...job,
      sizes: { ...job.sizes, b: 2 },
      tp: 2,
      pp: 2,
      vpp: 1,
      cp: 1,
      overlapGradReduce: false,
      overlapParamGather: false,
      recomputation: { granularity: 'full', method: 'uniform', layers: 1 },
    });
    expect(layoutLabel(s)).toBe('t2 p2 v1 cp1 d2 mb2 m4 sp recompute full');
    // t = 1 turns SP off unless the change sets it; more GPUs raise d.
    expect(changedSetup(job, { tp: 1, gpus: 16 })).toMatchObject({ tp: 1, sp: false, gpus: 16 });
    expect(layoutLabel(changedSetup(job, { tp: 1, gpus: 16 }))).toBe('t1 p1 v1 cp1 d16 mb1 m1 recompute none');
  });

  test('a layout Megatron refuses throws its rule', () => {
    expect(() => changedSetup(job, { tp: 3 })).toThrow('t must divide the attention heads and the query groups.');
    expect(() => changedSetup(job, { pp: 3 })).toThrow(/t · p · cp must divide the GPU budget/);
    expect(() => changedSetup(job, { tp: 1, microBatch: 4 })).toThrow(/global batch must be a multiple of b · DP/);
  });
});
