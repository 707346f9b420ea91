import { describe, expect, it } from 'vitest';
import {
  expertDegrees,
  moeDefaults,
  moeFlags,
  moeFromFlags,
  moeLayerPattern,
  moeRefusals,
  parseMoeLayerFreq,
  type MoeJob,
} from '../../../src/megatron/moe.ts';

const job: MoeJob = {
  tp: 1,
  sp: false,
  pp: 1,
  vpp: 1,
  gpus: 64,
  layers: 4,
  fullRecompute: false,
  halfPrecision: true,
  biases: false,
};
const moe = { ...moeDefaults(64, 1024), topk: 8, ep: 8, dispatcher: 'alltoall' as const };
const sources = (x: Parameters<typeof moeRefusals>[0], j: MoeJob = job): string[] =>
  moeRefusals(x, j).map((r) => r.source);

describe('the MoE layer pattern (gpt_layer_specs.py:647-657)', () => {
  it('puts a MoE layer at every i with i % N == 0, or where the list has 1', () => {
    expect(moeLayerPattern(2, 5)).toEqual([true, false, true, false, true]);
    expect(moeLayerPattern([0, 1, 1], 3)).toEqual([false, true, true]);
    expect(() => moeLayerPattern([1, 1], 3)).toThrow(/gpt_layer_specs.py:653/);
  });
  it('parses --moe-layer-freq as moe_freq_type evaluates it', () => {
    expect(parseMoeLayerFreq('4')).toBe(4);
    expect(parseMoeLayerFreq('([0]*3+[1]*2)')).toEqual([0, 0, 0, 1, 1]);
    expect(parseMoeLayerFreq('[1,0,1]')).toEqual([1, 0, 1]);
    expect(parseMoeLayerFreq('([1]*2+[0])*2')).toEqual([1, 1, 0, 1, 1, 0]);
    expect(() => parseMoeLayerFreq('[2]')).toThrow(/0 \(dense\) and 1 \(MoE\)/);
    expect(() => parseMoeLayerFreq('0')).toThrow(/N ≥ 1/);
  });
});

describe("Megatron's refusals of a MoE layout, each with its line", () => {
  it('accepts a legal layout', () => {
    expect(moeRefusals(moe, job)).toEqual([]);
  });
  it('refuses E not a multiple of EP (arguments.py:1602-1603)', () => {
    expect(sources({ ...moe, ep: 6 }, { ...job, gpus: 48 })).toContain('megatron/training/arguments.py:1602-1603');
  });
  it('refuses an expert mesh ETP·EP·p that does not divide N (parallel_state.py:881-883)', () => {
    expect(sources({ ...moe, etp: 2 }, { ...job, pp: 8 })).toContain('megatron/core/parallel_state.py:881-883');
  });
  it('refuses MoE with t > 1 without sequence parallelism (moe_layer.py:629-632)', () => {
    expect(sources(moe, { ...job, tp: 2 })).toContain('megatron/core/transformer/moe/moe_layer.py:629-632');
    expect(sources(moe, { ...job, tp: 2, sp: true })).toEqual([]);
  });
  it('refuses the shared-expert overlap with the allgather dispatcher', () => {
    const x = { ...moe, dispatcher: 'allgather' as const, sharedFfn: 2048, sharedExpertOverlap: true };
    expect(sources(x)).toContain('megatron/core/transformer/transformer_config.py:1644-1649');
  });
  it('refuses --overlap-moe-expert-parallel-comm where transformer_config.py asserts', () => {
    const x = { ...moe, overlapEpComm: true };
    expect(sources(x)).toEqual([]);
    expect(sources(x, { ...job, pp: 2 })).toContain('megatron/core/transformer/transformer_config.py:2674-2678');
    expect(sources({ ...x, ep: 1 })).toContain('megatron/core/transformer/transformer_config.py:2680-2682');
    expect(sources({ ...x, dispatcher: 'allgather' })).toContain(
      'megatron/core/transformer/transformer_config.py:2683-2686',
    );
    expect(sources(x, { ...job, fullRecompute: true })).toContain(
      'megatron/core/transformer/transformer_config.py:2688-2690',
    );
  });
  it('refuses flex at ETP·EP = 1 and top-k above E', () => {
    expect(sources({ ...moe, ep: 1, dispatcher: 'flex' })).toContain(
      'megatron/core/transformer/moe/token_dispatcher.py:1770',
    );
    expect(sources({ ...moe, topk: 65 })).toContain('megatron/core/transformer/moe/router.py:171');
  });
  it('refuses --moe-pad-expert-input-to-capacity without a capacity factor (:1686-1690) and with flex (DeepEP, :1600-1607)', () => {
    const pad = { ...moe, padToCapacity: true };
    expect(moeRefusals(pad, job).map((r) => r.message)).toEqual([
      'moe_expert_capacity_factor must be set to use moe_pad_expert_input_to_capacity (give --moe-expert-capacity-factor CF, e.g. 1.0).',
    ]);
    expect(sources({ ...pad, capacityFactor: 1 })).toEqual([]);
    expect(sources({ ...pad, capacityFactor: 1, dispatcher: 'flex' })).toEqual([
      'megatron/core/transformer/transformer_config.py:1600-1607',
    ]);
  });
});

describe('the expert mesh and the flags', () => {
  it('folds ETP · EP · EDP · p over the N ranks, ETP = t by default', () => {
    expect(expertDegrees(moe, 2, 2, 64)).toEqual({ etp: 2, ep: 8, edp: 2, localExperts: 8 });
    expect(expertDegrees({ ...moe, etp: 1 }, 2, 2, 64).edp).toBe(4);
  });
  it("writes the MoE flags in Megatron's spelling, defaults left out", () => {
    const f = moeFlags({ ...moe, groupedGemm: true, layerFreq: [0, 1, 1, 1] }, 1);
    expect(f).toContain('--num-experts 64');
    expect(f).toContain('--moe-router-topk 8');
    expect(f).toContain('--expert-model-parallel-size 8');
    expect(f).toContain('--moe-token-dispatcher-type alltoall');
    expect(f).toContain('--moe-grouped-gemm');
    expect(f).toContain('--moe-layer-freq [0,1,1,1]');
    expect(f.some((x) => x.startsWith('--expert-tensor-parallel-size'))).toBe(false);
    expect(f).not.toContain('--moe-pad-expert-input-to-capacity');
    const padded = moeFlags({ ...moe, capacityFactor: 1, padToCapacity: true }, 1);
    expect(padded.slice(-2)).toEqual(['--moe-expert-capacity-factor 1', '--moe-pad-expert-input-to-capacity']);
    const back = moeFromFlags((flag) => {
      const at = padded.find((x) => x.split(' ')[0] === flag);
      return at === undefined ? undefined : (at.split(' ')[1] ?? true);
    }, 1024);
    expect(back).toMatchObject({ capacityFactor: 1, padToCapacity: true });
  });
});
