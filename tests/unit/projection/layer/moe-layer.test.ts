import { describe, expect, it } from 'vitest';
import { gpus } from '../../../../src/hardware/gpus.ts';
import { gemmTime, memoryBoundUs } from '../../../../src/hardware/kernel-time.ts';
import {
  denseMlpFlops,
  moeCompute,
  moeModelFlops,
  moeRows,
  termsUs,
} from '../../../../src/projection/layer/moe-layer.ts';
import { mixtralLikeShapes } from '../../../moe-fixtures.ts';

const h100 = gpus['h100-sxm'];
const x = mixtralLikeShapes;
const term = (terms: ReturnType<typeof moeCompute>['forward'], name: string) => terms.find((t) => t.term === name)!;

describe('the rows a MoE layer moves and computes', () => {
  it('sends T·k rows and gives each local expert T·k·ETP·EP/E under uniform routing', () => {
    const r = moeRows(x);
    expect(r.sent).toBe(8192);
    expect(r.perExpert).toBe(8192); // 4096·2·1·8/8
    expect(moeRows({ ...x, ep: 2, etp: 2 }).perExpert).toBe((4096 * 2 * 2 * 2) / 8);
    expect(r.droppedShare).toBe(0);
  });
  it('caps the busiest expert at the capacity factor and reports the dropped share', () => {
    const r = moeRows({ ...x, imbalance: 2, capacityFactor: 1.25 });
    expect(r.load).toBe(1.25);
    expect(r.droppedShare).toBeCloseTo(1 - 1.25 / 2, 12);
    // C = ⌈T·k/E · cf⌉ rows per expert from this rank (moe_utils.py:256): never more than T·k.
    expect(moeRows({ ...x, capacityFactor: 0.5 }).sent).toBe(8 * Math.ceil((8192 / 8) * 0.5));
  });
  it('padded to capacity, every expert computes C = ⌈T·k/E · cf⌉ rows from each rank whatever the routing (token_dispatcher.py:511-534)', () => {
    // cf 1.25: C = ⌈8192/8 · 1.25⌉ = 1280 per expert and source rank; one local expert (E/EP = 1) computes C·ETP·EP = 10,240.
    const r = moeRows({ ...x, capacityFactor: 1.25, padToCapacity: true });
    expect(r).toEqual({ sent: 8 * 1280, load: 1, computed: 8 * 1280, perExpert: 1280 * 8, droppedShare: 0 });
    // Unpadded the same factor computes the routed rows only.
    expect(moeRows({ ...x, capacityFactor: 1.25 }).computed).toBe(8192);
    // Imbalance beyond cf still drops; the busiest rank computes C·E rows like every other.
    const skew = moeRows({ ...x, capacityFactor: 1.25, padToCapacity: true, imbalance: 2 });
    expect([skew.computed, skew.load, skew.droppedShare]).toEqual([8 * 1280, 1, 1 - 1.25 / 2]);
  });
});

describe("a MoE layer's compute", () => {
  it('prices permute and unpermute by bytes at the HBM rate', () => {
    const c = moeCompute(x, h100, 'bf16', 2);
    expect(term(c.forward, 'permute').us).toBeCloseTo(memoryBoundUs((4096 + 8192) * 4096 * 2, h100), 9);
    expect(term(c.forward, 'unpermute').us).toBe(term(c.forward, 'permute').us);
  });
  it('runs the grouped GEMM at a lower rate when each local expert gets fewer tokens', () => {
    const many = term(moeCompute(x, h100, 'bf16', 2).forward, 'expert-fc1').efficiency!;
    const few = term(moeCompute({ ...x, tokens: 128 }, h100, 'bf16', 2).forward, 'expert-fc1').efficiency!;
    expect(few).toBeLessThan(many);
  });
  it('is no slower as one grouped GEMM than as E/EP GEMMs one after another', () => {
    const y = { ...x, ep: 1, tokens: 512 };
    const grouped = term(moeCompute(y, h100, 'bf16', 2).forward, 'expert-fc1').us;
    const sequential = term(moeCompute({ ...y, groupedGemm: false }, h100, 'bf16', 2).forward, 'expert-fc1').us;
    expect(grouped).toBeLessThanOrEqual(sequential);
  });
  it('prices each backward GEMM as a dgrad and a wgrad, about twice the forward', () => {
    const c = moeCompute(x, h100, 'bf16', 2);
    const f = term(c.forward, 'expert-fc1').us;
    const b = term(c.backward, 'expert-fc1').us;
    expect(b / f).toBeGreaterThan(1.8);
    expect(b / f).toBeLessThan(2.4);
  });
  it('adds the shared experts only when there are some', () => {
    expect(termsUs(moeCompute(x, h100, 'bf16', 2).forward, (t) => t.term.startsWith('shared'))).toBe(0);
    expect(
      termsUs(moeCompute({ ...x, sharedFfn: 2048 }, h100, 'bf16', 2).forward, (t) => t.term.startsWith('shared')),
    ).toBeGreaterThan(0);
  });
});

describe('the clock the MoE GEMMs run at', () => {
  it('is the one asked for: sustained in a step as the dense layer’s, the memory-bound terms unchanged', () => {
    const burst = moeCompute(x, h100, 'bf16', 2);
    const sustained = moeCompute(x, h100, 'bf16', 2, 'sustained');
    // fc1 of 8,192 rows per expert: [8192, 4096]·[4096, 2·14336], one grouped GEMM of the 1 local expert.
    const fc1 = { M: 8192, N: 2 * 14336, K: 4096, batch: 1 };
    expect(term(sustained.forward, 'expert-fc1').us).toBe(gemmTime(fc1, h100, 'bf16', undefined, 'sustained').us);
    expect(term(burst.forward, 'expert-fc1').us).toBe(gemmTime(fc1, h100, 'bf16').us);
    // Compute-bound: slower by about 1/r, r = MSMF/MAMF = 0.887 on H100 (sustained-clock.ts).
    const ratio = term(sustained.forward, 'expert-fc1').us / term(burst.forward, 'expert-fc1').us;
    expect(ratio).toBeGreaterThan(1.05);
    expect(ratio).toBeLessThanOrEqual(1 / 0.887 + 1e-9);
    expect(term(sustained.forward, 'permute').us).toBe(term(burst.forward, 'permute').us);
  });
});

describe('MoE model FLOPs (active parameters)', () => {
  it('counts the router, k experts and the shared experts, 3 × the forward', () => {
    const f = moeModelFlops({ hidden: 10, experts: 4, topk: 2, ffn: 20, sharedFfn: 5, gated: true }, 7);
    expect(f).toBe(3 * 2 * 7 * 10 * (4 + 2 * 3 * 20 + 3 * 5));
    // One expert of the dense FFN, top-1: the dense MLP plus the router.
    expect(moeModelFlops({ hidden: 10, experts: 1, topk: 1, ffn: 20, sharedFfn: 0, gated: false }, 7)).toBe(
      denseMlpFlops(10, 20, false, 7) + 3 * 2 * 7 * 10,
    );
  });
});
