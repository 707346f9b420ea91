import { describe, expect, test } from 'vitest';
import { gemmFlops } from '../../../src/reference/gemm.ts';
import {
  accountPlan,
  collectiveCosts,
  commTotals,
  flopTotals,
  rankMemory,
} from '../../../src/accounting/accounting.ts';
import { activationBytes, activationTerms, gatheredQkvBytes } from '../../../src/accounting/activations.ts';
import { collectiveTimeUs, interconnectPresets } from '../../../src/hardware/interconnect.ts';
import { parameterBytes, parameterShards } from '../../../src/accounting/parameters.ts';
import { configFromPreset, type LayerConfig, type PresetName } from '../../../src/parallel/config.ts';
import type { LayerPlan } from '../../../src/parallel/plan-types.ts';
import { makePlan } from '../../../src/parallel/plan.ts';
import { handPlan } from './hand-plan.ts';

/** Where plans come from: the hand-written one now; add the plan recorder here when it lands. */
// The hand-written plan states the formulas independently; the recorded plan is the layer's own code run on shapes.
const planSources: readonly (readonly [string, (c: LayerConfig) => Promise<LayerPlan>])[] = [
  ['hand-written plan', async (c) => handPlan(c)],
  ['plan recorded from the layer', async (c) => (await makePlan(c)).plan],
];

const cfg = (p: PresetName, o: Partial<LayerConfig>): LayerConfig => configFromPreset(p, o);
const bytes = (...dims: number[]): number => 4 * dims.reduce((a, x) => a * x, 1);

describe.each(planSources)('accounting of the %s', (_source, planFor) => {
  describe.each([2, 4])('t = %i, no vocabulary (gpt2-layer)', (t) => {
    const c = cfg('gpt2-layer', { tp: t });
    const S = bytes(c.s, c.b, c.h);

    test('without SP the forward does exactly two all-reduces of s·b·h·4 bytes, each sending 2(t−1)/t·S on the ring', async () => {
      const fw = collectiveCosts(await planFor(c)).filter((x) => x.phase === 'forward');
      expect(fw.map((x) => [x.op, x.payloadBytes, x.ringBytesSent])).toEqual([
        ['allReduce', S, (2 * (t - 1) * S) / t],
        ['allReduce', S, (2 * (t - 1) * S) / t],
      ]);
    });

    test('with SP each forward all-reduce becomes a reduce-scatter plus an all-gather of S each, with the same ring bytes in total', async () => {
      const plain = commTotals(collectiveCosts(await planFor(c)));
      const sp = commTotals(collectiveCosts(await planFor({ ...c, sp: true })));
      expect(sp.byOp.forward.allReduce).toBeUndefined();
      expect(sp.byOp.forward.reduceScatter).toEqual({
        count: 2,
        payloadBytes: 2 * S,
        ringBytesSent: (2 * (t - 1) * S) / t,
      });
      expect(sp.byOp.forward.allGather).toEqual({
        count: 2,
        payloadBytes: 2 * S,
        ringBytesSent: (2 * (t - 1) * S) / t,
      });
      expect(sp.forward.ringBytesSent).toBe(plain.forward.ringBytesSent);
    });

    test('the backward moves the same f/g volume: two all-reduces of S without SP, two reduce-scatters of S with SP (plus their all-gathers)', async () => {
      const plain = commTotals(collectiveCosts(await planFor(c)));
      expect(plain.byOp.backward).toEqual({
        allReduce: { count: 2, payloadBytes: 2 * S, ringBytesSent: (4 * (t - 1) * S) / t },
      });
      const sp = commTotals(collectiveCosts(await planFor({ ...c, sp: true })));
      expect(sp.byOp.backward.reduceScatter).toEqual({
        count: 2,
        payloadBytes: 2 * S,
        ringBytesSent: (2 * (t - 1) * S) / t,
      });
      expect(2 * (sp.byOp.backward.reduceScatter?.ringBytesSent ?? 0)).toBe(plain.backward.ringBytesSent);
    });

    test('with SP the backward all-gathers S four times (two gradients, two norm outputs re-gathered for wgrad) and all-reduces both norm weight gradients once, coalesced ([2h])', async () => {
      const sp = commTotals(collectiveCosts(await planFor({ ...c, sp: true })));
      expect(sp.byOp.backward.allGather).toEqual({
        count: 4,
        payloadBytes: 4 * S,
        ringBytesSent: (4 * (t - 1) * S) / t,
      });
      // finalize_model_grads runs after backward: one all-reduce of [dg1 | dg2], phase 'finalize'.
      const costs = collectiveCosts(await planFor({ ...c, sp: true })).filter((x) => x.phase === 'finalize');
      expect(costs.filter((x) => x.op === 'allReduce').map((x) => x.payloadBytes)).toEqual([bytes(2 * c.h)]);
    });

    test('modeled on PCIe, the SP forward costs exactly what the all-reduce forward costs', async () => {
      const link = interconnectPresets['pcie-gen3'];
      const plain = accountPlan(await planFor(c), link).comm.forward.modeledUs;
      expect(plain).toBeCloseTo(2 * collectiveTimeUs('allReduce', S, t, link), 9);
      expect(accountPlan(await planFor({ ...c, sp: true }), link).comm.forward.modeledUs).toBeCloseTo(plain ?? NaN, 9);
    });
  });

  describe('parameter bytes', () => {
    test.each([
      ['gpt2-layer', 4],
      ['classroom', 2],
      ['classroom', 4],
      ['llama-gqa', 8],
    ] as const)(
      'of %s at t = %i sum over ranks to TP=1 plus the t norm copies and vocabulary padding (no KV weights copied, also when groups < t)',
      async (preset, t) => {
        const c = cfg(preset, { tp: t });
        const one = parameterBytes(await planFor({ ...c, tp: 1 }), 0);
        const plan = await planFor(c);
        const all = plan.ranks.reduce((a, r) => a + parameterBytes(plan, r.rank), 0);
        const replication = (t - 1) * 2 * bytes(c.h) + (c.vocab > 0 ? 2 * bytes(plan.paddedVocab - c.vocab, c.h) : 0);
        expect(all).toBe(one + replication);
      },
    );

    test('of the classroom layer at t = 1 are its weights one by one: qkv [16, 32], proj [16, 16], gate/up/down, two norms, embedding and output [h, V] as stored', async () => {
      const plan = await planFor(cfg('classroom', { tp: 1 }));
      expect(parameterShards(plan, 0).map((p) => [p.name, p.shape])).toEqual([
        ['embedding', [32, 16]],
        ['norm1', [16]],
        ['qkv', [16, 32]],
        ['proj', [16, 16]],
        ['norm2', [16]],
        ['gate', [16, 32]],
        ['up', [16, 32]],
        ['down', [32, 16]],
        ['output', [16, 32]],
      ]);
      const m = rankMemory(plan, 0);
      expect(m.parameterBytes).toBe(4 * (512 + 16 + 512 + 256 + 16 + 512 + 512 + 512 + 512));
      expect(m.gradientBytes).toBe(m.parameterBytes);
      expect(m.totalBytes).toBe(2 * m.parameterBytes + m.activationBytes);
    });

    test('of linear_qkv with groups < t are an even column slice W/t (llama-gqa, t = 8: qkv [256, (8 + 2·2)·32/8 = 48])', async () => {
      const plan = await planFor(cfg('llama-gqa', { tp: 8 }));
      for (const r of plan.ranks)
        expect(parameterShards(plan, r.rank).find((p) => p.name === 'qkv')?.shape).toEqual([256, 48]);
    });
  });

  describe('FLOPs', () => {
    test.each([
      ['gpt2-layer', 2],
      ['gpt2-layer', 4],
      ['classroom', 2],
      ['llama-gqa', 2],
    ] as const)('of all ranks’ GEMMs in %s at t = %i sum to the TP=1 GEMM FLOPs when groups ≥ t', async (preset, t) => {
      for (const sp of [false, true]) {
        const c = cfg(preset, { tp: t, sp });
        const one = accountPlan(await planFor({ ...c, tp: 1, sp: false })).gemmFlops;
        const local = accountPlan(await planFor(c)).gemmFlops;
        const vocabPad = c.vocab > 0 ? 3 * 2 * c.s * c.b * c.h * ((await planFor(c)).paddedVocab - c.vocab) : 0;
        expect(t * local.total).toBe(one.total + vocabPad);
      }
    });

    test('of the TP=1 gpt2-layer forward are the hand count: 2·sb·h·(3h + h + 3·ffn) + 2·2·b·s²·h', async () => {
      const c = cfg('gpt2-layer', { tp: 1 });
      const { s, b, h, ffn } = c;
      expect(accountPlan(await planFor(c)).gemmFlops.forward).toBe(
        2 * s * b * h * (3 * h + h + 3 * ffn) + 2 * 2 * b * s * s * h,
      );
    });

    test('of the GEMMs in backward are twice the forward ones (dgrad and wgrad)', async () => {
      for (const preset of ['gpt2-layer', 'classroom', 'llama-gqa'] as const) {
        const g = accountPlan(await planFor(cfg(preset, { tp: 2 }))).gemmFlops;
        expect(g.backward).toBe(2 * g.forward);
      }
    });

    test.each([4, 8])(
      'with groups < t (llama-gqa, t = %i) of all ranks sum to TP=1 plus the vocabulary padding: each linear_qkv column is computed once',
      async (t) => {
        for (const sp of [false, true]) {
          const c = cfg('llama-gqa', { tp: t, sp });
          const one = accountPlan(await planFor({ ...c, tp: 1, sp: false })).gemmFlops.total;
          const plan = await planFor(c);
          const vocabPad = 3 * 2 * c.s * c.b * c.h * (plan.paddedVocab - c.vocab);
          expect(t * accountPlan(plan).gemmFlops.total).toBe(one + vocabPad);
        }
      },
    );

    test.each([4, 8])(
      'with groups < t (llama-gqa, t = %i) add one all-gather of the QKV activations forward and one reduce-scatter of their gradient backward, S = s·b·W·4 each',
      async (t) => {
        const c = cfg('llama-gqa', { tp: t });
        const W = (c.heads + 2 * c.groups) * (c.h / c.heads);
        const S = bytes(c.s, c.b, W);
        const gathers = (p: LayerPlan) =>
          collectiveCosts(p).filter((x) => x.mapping.startsWith('allGatherLastDimFromTensorParallelRegion'));
        const qkv = gathers(await planFor(c));
        expect(qkv.map((x) => [x.phase, x.op, x.payloadBytes, x.ringBytesSent])).toEqual([
          ['forward', 'allGather', S, ((t - 1) * S) / t],
          ['backward', 'reduceScatter', S, ((t - 1) * S) / t],
        ]);
        // groups ≥ t gathers nothing.
        expect(gathers(await planFor({ ...c, tp: 2 }))).toEqual([]);
      },
    );

    test('per phase add up every op, kernels included, and GEMM ops carry 2·M·N·K·batch', async () => {
      const plan = await planFor(cfg('classroom', { tp: 2 }));
      const all = flopTotals(plan.ops);
      expect(all.total).toBe(plan.ops.reduce((a, o) => a + o.flops, 0));
      expect(all.forward + all.backward).toBe(all.total);
      for (const o of plan.ops) if (o.kind === 'gemm') expect(o.flops).toBe(gemmFlops(o.gemm));
      expect(accountPlan(plan).flops.total).toBeGreaterThan(accountPlan(plan).gemmFlops.total);
    });
  });

  describe('activation bytes', () => {
    test.each([2, 4])(
      'of gpt2-layer at t = %i without SP are 4·(4sbh + 2sb + (4sbh + b·heads·s² + 3sb·ffn)/t)',
      async (t) => {
        const c = cfg('gpt2-layer', { tp: t });
        const { s, b, h, heads, ffn } = c;
        const elems = 4 * s * b * h + 2 * s * b + (4 * s * b * h + b * heads * s * s + 3 * s * b * ffn) / t;
        expect(activationBytes(await planFor(c), 0)).toBe(4 * elems);
      },
    );

    test.each([2, 4])(
      'of gpt2-layer at t = %i with SP are the TP=1 activations divided by t (Korthikanti’s sbh/t·(…) shape)',
      async (t) => {
        const c = cfg('gpt2-layer', { tp: t, sp: true });
        expect(activationBytes(await planFor(c), 0) * t).toBe(
          activationBytes(await planFor({ ...c, tp: 1, sp: false }), 0),
        );
      },
    );

    test('SP saves exactly the replicated norm and column-linear inputs: (4sbh + 2sb)(1 − 1/t)·4 bytes', async () => {
      const c = cfg('gpt2-layer', { tp: 4 });
      const saved = activationBytes(await planFor(c), 0) - activationBytes(await planFor({ ...c, sp: true }), 0);
      expect(saved).toBe((4 * c.s * c.b * c.h + 2 * c.s * c.b) * (1 - 1 / 4) * 4);
    });

    test('with a vocabulary add the token ids, the output layer input (under SP its [s/t, b, h] shard, re-gathered for wgrad), the local logits [s, b, V_padded/t], the loss statistics and the targets the gradient reads again', async () => {
      const plan = await planFor(cfg('classroom', { tp: 4, vocab: 30, sp: true }));
      const terms = activationTerms(plan, 0).filter((x) => ['embedding', 'output', 'loss'].includes(x.op));
      expect(terms.map((x) => [x.op, x.tensor, x.shape, x.formula])).toEqual([
        ['embedding', 'token ids', [8, 1], 's·b'],
        ['output', 'input', [2, 1, 16], 's/t·b·h'],
        ['loss', 'logits', [8, 1, 8], 's·b·vl'],
        ['loss', 'max', [8, 1], 's·b'],
        ['loss', 'sum exp', [8, 1], 's·b'],
        ['loss', 'targets', [8, 1], 's·b'],
      ]);
    });

    test('with groups < t keep one KV group per rank and nothing of the gathered [s, b, W] (llama-gqa, t = 8: Q [64, 1, 1, 32], K and V [64, 1, 1, 32])', async () => {
      const c = cfg('llama-gqa', { tp: 8 });
      const plan = await planFor(c);
      const terms = activationTerms(plan, 5);
      expect(terms.filter((x) => x.op.startsWith('attn.')).map((x) => [x.tensor, x.shape])).toEqual([
        ['Q (after RoPE)', [64, 1, 1, 32]],
        ['K (after RoPE)', [64, 1, 1, 32]],
        ['probabilities', [1, 1, 64, 64]],
        ['V', [64, 1, 1, 32]],
      ]);
      expect(terms.some((x) => x.shape.includes(384))).toBe(false);
      // The gathered QKV is transient: the memory budget counts it as scratch (4·s·b·W bytes).
      expect(gatheredQkvBytes(c)).toBe(4 * 64 * 1 * 384);
      expect(gatheredQkvBytes({ ...c, tp: 2 })).toBe(0);
    });

    test("GQA as Megatron's local spec keeps it: K and V repeated to the rank's nq query heads (llama-gqa, t = 2: nq 4, one KV group; 2·s·b·(nq − nkv)·d·4 bytes more than the playground's kernels keep)", async () => {
      const plan = await planFor(cfg('llama-gqa', { tp: 2 }));
      const attn = (kv: 'groups' | 'heads') =>
        activationTerms(plan, 0, kv)
          .filter((x) => x.op.startsWith('attn.'))
          .map((x) => [x.tensor, x.shape, x.formula]);
      expect(attn('heads')).toEqual([
        ['Q (after RoPE)', [64, 1, 4, 32], 's·b·nq·d'],
        ['K (after RoPE, repeated to nq heads)', [64, 1, 4, 32], 's·b·nq·d'],
        ['probabilities', [1, 4, 64, 64], 'b·nq·s²'],
        ['V (repeated to nq heads)', [64, 1, 4, 32], 's·b·nq·d'],
      ]);
      expect(attn('groups')).toEqual([
        ['Q (after RoPE)', [64, 1, 4, 32], 's·b·nq·d'],
        ['K (after RoPE)', [64, 1, 1, 32], 's·b·nkv·d'],
        ['probabilities', [1, 4, 64, 64], 'b·nq·s²'],
        ['V', [64, 1, 1, 32], 's·b·nkv·d'],
      ]);
      expect(activationBytes(plan, 0, 'heads') - activationBytes(plan, 0)).toBe(2 * 64 * 1 * (4 - 1) * 32 * 4);
    });

    test('name their formulas with s/t under SP', async () => {
      const terms = activationTerms(await planFor(cfg('gpt2-layer', { tp: 2, sp: true })), 1);
      expect(terms.find((x) => x.op === 'norm1' && x.tensor === 'input')).toMatchObject({
        shape: [16, 1, 768],
        formula: 's/t·b·h',
      });
      expect(terms.find((x) => x.op === 'attn.softmax')).toMatchObject({ shape: [1, 6, 32, 32], formula: 'b·nq·s²' });
    });
  });

  test('accountPlan reports memory for every rank and leaves out modeled times without an interconnect', async () => {
    const a = accountPlan(await planFor(cfg('llama-gqa', { tp: 4, sp: true })));
    expect(a.memory.map((m) => m.rank)).toEqual([0, 1, 2, 3]);
    expect(a.comm.total.modeledUs).toBeUndefined();
    expect(a.comm.total.count).toBe(a.collectives.length);
    expect(a.comm.forward.count + a.comm.backward.count).toBe(a.comm.total.count);
  });
});
