import { describe, expect, test } from 'vitest';
import { parseProjectArgs } from '../../../../scripts/project/project-args.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';

// Qwen3-30B-A3B (h 2048, 32 heads, 4 groups, head_dim 128 = --kv-channels 128, 48 layers) at t 1, EP 8
// on 8 H100, global batch 8 of s 4096, priced with d = 128 and, for the difference, with d = h/heads = 64.
describe('Qwen3-30B-A3B priced at its head width (--kv-channels 128), against d = h / heads', () => {
  test('the parameters and model FLOPs grow by exactly the attention’s wider Q, K, V, proj and core attention', async () => {
    const args = parseProjectArgs(
      '--hf-config qwen3-30b-a3b --system dgx-h100 --dtype bf16 --gpus 8 --global-batch 8 --ep 8 --etp 1 --tp 1'.split(
        ' ',
      ),
    );
    const machine = { system: args.system, dtype: args.dtype, kernels: args.kernels };
    const setup = { ...args.setup, tp: args.degrees[0]! };
    expect([setup.tp, setup.sizes.kvChannels]).toEqual([1, 128]);
    const { kvChannels: _, ...narrow } = setup.sizes;
    const [wide, half] = await Promise.all([
      projectStep(setup, machine),
      projectStep({ ...setup, sizes: narrow }, machine),
    ]);
    // Attention weights per layer: h·(heads + 2·groups)·d + heads·d·h = 2048·40·d + 32·d·2048,
    // 18,874,368 at d = 128 and 9,437,184 at d = 64; the difference over 48 layers, t 1.
    const dParams = 2048 * 40 * 128 + 32 * 128 * 2048 - (2048 * 40 * 64 + 32 * 64 * 2048);
    expect(dParams).toBe(9_437_184);
    expect(wide.stageParams[0]! - half.stageParams[0]!).toBe(48 * dParams);
    // Model FLOPs (forward + backward = 3 × forward): per sequence and layer 2·s·ΔW for the linear GEMMs
    // and 4·s²·heads·Δd for QKᵀ and PV over the full s × s; 8 sequences.
    const s = 4096;
    const perLayer = 2 * s * dParams + 4 * s * s * 32 * 64;
    expect(wide.modelFlopsPerStep - half.modelFlopsPerStep).toBeCloseTo(8 * 48 * 3 * perLayer, -3);
    expect(wide.stepMs).toBeGreaterThan(half.stepMs);
  }, 30_000);
});
