import { describe, expect, it } from 'vitest';
import { gpus, peakFlops } from '../../../src/hardware/gpus.ts';
import { gemmTime, kernelModel, memoryBoundUs } from '../../../src/hardware/kernel-time.ts';

const v100 = gpus['v100-pcie'];
const a100 = gpus['a100-sxm-80gb'];

describe('gemmTime', () => {
  it('grows with every dimension', () => {
    const base = { M: 4096, N: 4096, K: 4096, batch: 1 };
    const t = gemmTime(base, v100, 'fp16').us;
    for (const k of ['M', 'N', 'K', 'batch'] as const)
      expect(gemmTime({ ...base, [k]: base[k] * 2 }, v100, 'fp16').us).toBeGreaterThan(t);
  });

  it('reaches the assumed fraction of peak on a large GEMM and no more', () => {
    const g = gemmTime({ M: 8192, N: 8192, K: 8192, batch: 1 }, a100, 'bf16');
    expect(g.efficiency).toBeLessThanOrEqual(kernelModel.gemmEfficiency);
    expect(g.efficiency).toBeGreaterThan(0.7 * kernelModel.gemmEfficiency);
  });

  it('loses efficiency per shard as N/t (column-parallel) or K/t (row-parallel) shrinks', () => {
    // The seeds' tiny GPT: 4096 tokens, h 512, FFN 1408, on a V100 in fp16.
    const col = [1, 2, 4, 8].map((t) => gemmTime({ M: 4096, N: 1408 / t, K: 512, batch: 1 }, v100, 'fp16').efficiency);
    const row = [1, 2, 4, 8].map((t) => gemmTime({ M: 4096, N: 512, K: 1408 / t, batch: 1 }, v100, 'fp16').efficiency);
    for (const e of [col, row]) for (let i = 1; i < e.length; i++) expect(e[i]).toBeLessThan(e[i - 1]!);
  });

  it('charges a partial tile as a full one (tile quantization)', () => {
    // One column past a multiple of every tile width adds a whole column of tiles: more time
    // for 0.1% more work, whichever tile the library picks.
    const at = gemmTime({ M: 4096, N: 1024, K: 1024, batch: 1 }, a100, 'fp16');
    const past = gemmTime({ M: 4096, N: 1025, K: 1024, batch: 1 }, a100, 'fp16');
    expect(past.us).toBeGreaterThan(at.us * 1.01);
    expect(past.efficiency).toBeLessThan(at.efficiency);
  });

  it('charges a partial wave as a full one (wave quantization)', () => {
    // V100, 80 SMs, K large (compute-bound): 80 tiles of 128×128 fill one wave; one more row of
    // tiles needs a second wave (or smaller, less efficient tiles).
    const full = gemmTime({ M: 128 * 80, N: 128, K: 16384, batch: 1 }, v100, 'fp16');
    const over = gemmTime({ M: 128 * 81, N: 128, K: 16384, batch: 1 }, v100, 'fp16');
    expect(full.waves).toBe(1);
    expect(full.memoryBound).toBe(false);
    expect(over.efficiency).toBeLessThan(0.8 * full.efficiency);
  });

  it('makes tiny GEMMs launch-bound and skinny ones memory-bound', () => {
    const tiny = gemmTime({ M: 8, N: 8, K: 8, batch: 1 }, v100, 'fp16');
    expect(tiny.us).toBeGreaterThan(kernelModel.launchUs);
    expect(tiny.us).toBeLessThan(1.05 * kernelModel.launchUs);
    const gemv = gemmTime({ M: 1, N: 8192, K: 8192, batch: 1 }, v100, 'fp16');
    expect(gemv.memoryBound).toBe(true);
    // 8192² fp16 weights = 128 MiB over 0.83·900 GB/s ≈ 180 µs.
    expect(gemv.us).toBeGreaterThan(170);
    expect(gemv.us).toBeLessThan(190);
  });

  it('runs fp32 on CUDA cores, well below the fp16 tensor-core rate', () => {
    const g = { M: 4096, N: 4096, K: 4096, batch: 1 };
    expect(gemmTime(g, v100, 'fp32').us / gemmTime(g, v100, 'fp16').us).toBeGreaterThan(5);
  });
});

describe('memoryBoundUs', () => {
  it('is bytes over the achievable HBM bandwidth plus a launch', () => {
    expect(memoryBoundUs(0, v100)).toBe(kernelModel.launchUs);
    const bytes = 1e9;
    expect(memoryBoundUs(bytes, v100) - kernelModel.launchUs).toBeCloseTo(1e6 / (0.83 * 900), 3);
  });
});

describe('peakFlops', () => {
  it('names the format a GPU lacks', () => {
    expect(() => peakFlops(v100, 'bf16')).toThrow(/V100 PCIe 32 GB has no bf16 tensor cores/);
    expect(peakFlops(a100, 'bf16')).toBe(312e12);
    expect(peakFlops(gpus['h100-sxm'], 'fp16')).toBe(989.5e12);
  });
});
