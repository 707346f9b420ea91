import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';
import { moeLayersPerChunk } from '../../../../src/projection/step/moe-step.ts';
import { isSharedTerm, termsUs } from '../../../../src/projection/layer/moe-layer.ts';
import { splitLayers } from '../../../../src/mesh/pipeline-split.ts';
import { smallDenseJob, smallMoeJob } from '../../../moe-fixtures.ts';

const h100 = { system: systems['dgx-h100'], dtype: 'bf16' as const };
const dense = smallDenseJob;
const moe = smallMoeJob;

describe('MoE layers in the pipeline split', () => {
  it('counts the MoE layers of each chunk: chunk c of stage i is virtual stage c·p + i', () => {
    const split = splitLayers(8, 2, 2, {});
    // Virtual stages 0..3 hold layers [0,1], [2,3], [4,5], [6,7]; stage 0 has virtual stages 0 and 2.
    expect(moeLayersPerChunk(split, [true, false, true, true, false, false, true, true])).toEqual([
      [1, 0],
      [2, 2],
    ]);
  });
});

describe('a MoE step', () => {
  it('with one expert of the dense FFN and top-1, counts the dense model FLOPs plus the router', async () => {
    const d = await projectStep(dense, h100);
    const m = await projectStep(moe({ experts: 1, topk: 1, ep: 1 }), h100);
    const { s, h } = dense.sizes;
    const router = 3 * 2 * s * h * 1; // per layer and sequence, E = 1
    const sequences = dense.globalBatch;
    expect(m.modelFlopsPerStep).toBeCloseTo(d.modelFlopsPerStep + dense.layers * sequences * router, -3);
  });
  it('counts k active experts in the model FLOPs (MFU from active parameters)', async () => {
    const k1 = await projectStep(moe({ topk: 1 }), h100);
    const k2 = await projectStep(moe({ topk: 2 }), h100);
    const { s, h } = dense.sizes;
    const expert = 3 * 2 * s * 3 * h * 5632; // one more expert per token, per layer and sequence
    expect(k2.modelFlopsPerStep - k1.modelFlopsPerStep).toBeCloseTo(dense.layers * dense.globalBatch * expert, -3);
  });
  it('holds E/EP experts per rank and shards their optimizer state over expert-DP', async () => {
    const r = await projectStep(moe({ ep: 4 }), h100);
    const x = r.moe!;
    expect(x.model.degrees).toEqual({ etp: 1, ep: 4, edp: 2, localExperts: 2 });
    expect(x.stageExpertParams[0]).toBe(dense.layers * 2 * 3 * 2048 * 5632);
    const state = r.stageMemory[0]!.intervals.find((i) => i.label.includes('expert main weights and Adam moments'));
    expect(state?.label).toContain('(1/2 shard)');
    // Distributed optimizer, bf16: 12 bytes of main weights and moments per parameter, over EDP = 2.
    expect(state?.bytes).toBe((x.stageExpertParams[0]! * 12) / 2);
  });
  it('prices the all-to-all higher when EP leaves the node and lower when the A2A overlaps', async () => {
    const inNode = await projectStep(moe({ ep: 8 }), h100);
    const across = await projectStep({ ...moe({ ep: 16, experts: 16 }), gpus: 16, globalBatch: 32 }, h100);
    expect(across.moe!.model.dispatch.exchangeUs).toBeGreaterThan(inNode.moe!.model.dispatch.exchangeUs);
    const overlapped = await projectStep(moe({ ep: 8, overlapEpComm: true }), h100);
    expect(overlapped.moe!.model.exposedCommMs.forward).toBeLessThanOrEqual(inNode.moe!.model.exposedCommMs.forward);
    expect(overlapped.stepMs).toBeLessThanOrEqual(inNode.stepMs);
  });
  it('runs slower under load imbalance, and refuses what Megatron refuses with its line', async () => {
    const even = await projectStep(moe(), h100);
    const skew = await projectStep(moe({ imbalance: 1.5 }), h100);
    expect(skew.stepMs).toBeGreaterThan(even.stepMs);
    await expect(projectStep(moe({ ep: 3 }), h100)).rejects.toThrow(/arguments.py:1602-1603/);
  });
  it('keeps the routed activations × k: more memory at larger top-k', async () => {
    const k1 = await projectStep(moe({ topk: 1 }), h100);
    const k4 = await projectStep(moe({ topk: 4 }), h100);
    expect(k4.memory.totalBytes).toBeGreaterThan(k1.memory.totalBytes);
  });
  it('runs the shared experts beside the exchanges with --moe-shared-expert-overlap: max in place of the sum', async () => {
    const after = (await projectStep(moe({ sharedFfn: 2816 }), h100)).moe!.model;
    const beside = (await projectStep(moe({ sharedFfn: 2816, sharedExpertOverlap: true }), h100)).moe!.model;
    const shared = termsUs(after.compute.forward, isSharedTerm) / 1e3;
    expect(shared).toBeGreaterThan(0);
    expect(beside.commMs.forward).toBe(after.commMs.forward); // the exchanges alone
    expect(after.forwardMs - beside.forwardMs).toBeCloseTo(Math.min(shared, after.exposedCommMs.forward), 12);
  });
});
