import { describe, expect, it } from 'vitest';
import { gpus } from '../../../../src/hardware/gpus.ts';
import { gemmTable } from '../../../../src/projection/layer/gemm-table.ts';

describe('gemmTable (npm run project -- --gemm-table)', () => {
  const rows = gemmTable(gpus['h100-sxm'], 'bf16');

  it('gives square 8192 on H100 in bf16 by hand', () => {
    // 256×128 tiles: 32·64 = 2048; ⌈2048/132⌉ = 16 waves for 15.52 waves of work;
    // η = 794.5/989.5 = 0.8029 at the MAMF shape 2048×2048×13312, whose tile takes
    // W = 2·256·128·13312 / (0.8029·989.5e12/132) = 144.945 µs including its epilogue
    // E = 256·128·2 B at 0.83·3350/132 GB/s = 3.111 µs: η_main = η·W/(W − E) = 0.82054.
    // Square 8192: a tile is 2·256·128·8192 / (0.82054·989.5e12/132) = 87.282 µs + E;
    // 16 waves = 1446.3 µs + 0.9 launch: 2·8192³ / (1447.2 µs · 989.5e12) = 0.7678.
    const sq = rows.find((r) => r.label === 'square 8192')!;
    expect(sq.time.tile).toEqual([256, 128]);
    expect(sq.time.tiles).toBe(2048);
    expect(sq.time.waves).toBe(16);
    expect(sq.time.efficiency).toBeCloseTo(0.7678, 4);
  });

  it('shows the column-parallel fc1 losing efficiency from t = 1 to t = 8', () => {
    const fc1 = [1, 2, 4, 8].map((t) => rows.find((r) => r.label === `MLP fc1, t = ${t}`)!.time.efficiency);
    expect(fc1[3]!).toBeLessThan(fc1[0]! - 0.05);
    expect(rows).toHaveLength(12);
  });
});
