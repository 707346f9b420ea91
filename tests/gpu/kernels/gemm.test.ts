import { describe, expect, test } from 'vitest';
import { gemm, gemmStrided } from '../../../src/kernels/gemm.ts';
import { gemmVariants, supportedGemmVariants, type GemmVariant } from '../../../src/kernels/gemm-variants.ts';
import { gemmStaging, stagingRefusal } from '../../../src/reference/gemm-staging.ts';
import { tuneGemm } from '../../../src/kernels/gemm-tuner.ts';
import { createTensor } from '../../../src/kernels/tensor.ts';
import { denseProblem, gemmFlops, gemmRef, type GemmProblem } from '../../../src/reference/gemm.ts';
import { randomArray } from '../../../src/reference/random.ts';
import { float32Tolerance } from '../../../src/reference/compare.ts';
import { download, expectClose, gpuCase, testDevice, upload } from '../gpu-case.ts';
import { GpuTimer } from '../../../src/kernels/gpu-timer.ts';

// Tolerance: inputs are uniform in [-1, 1), so every product is ≤ 1 in magnitude; a float32 sum
// of K products (plus bias and the accumulated C: K + 2 addends) stays within
// float32Tolerance(K + 2) of the float64 twin whatever order a tiling sums in.
const tol = (K: number) => float32Tolerance(K + 2, 1);

// [M, N, K]: size 1, tall-skinny, short-wide, skinny M (decode-like), sizes that are multiples
// of no tile (tiles are 8, 16, 64, 128, 256 wide), a K with a remainder after the 4-wide k-step,
// and one every tile covers exactly (128 × 256: the subgroup variants' unguarded stores, EDGE = 0).
const shapes: [number, number, number][] = [
  [1, 1, 1],
  [1, 70, 33],
  [130, 3, 65],
  [3, 300, 5],
  [67, 45, 129],
  [129, 257, 6],
  [64, 64, 64],
  [128, 256, 18],
];

const variants = await testDevice().then(supportedGemmVariants);

/** The variant gemm runs for `p` when asked for `v`: v, or a staged variant's fallback where staging refuses p. */
async function expectedVariant(v: GemmVariant, p: GemmProblem): Promise<GemmVariant> {
  const staged = gemmVariants[v].staged;
  const refused = staged && stagingRefusal(p, gemmStaging(p), (await testDevice()).limits);
  return refused ? staged.fallback : v;
}

describe.each(variants)('gemm variant %s', (variant) => {
  for (const [M, N, K] of shapes) {
    for (const [transA, transB] of [
      [false, false],
      [false, true],
      [true, false],
      [true, true],
    ]) {
      test(`C = op(A)·op(B) matches the twin for M=${M} N=${N} K=${K}, transA=${transA} transB=${transB}`, async () => {
        await gpuCase(async (ctx) => {
          const a = randomArray(M * K, M + 7 * K),
            b = randomArray(K * N, N + 3 * K);
          const ta = upload(ctx, 'A', transA ? [K, M] : [M, K], a);
          const tb = upload(ctx, 'B', transB ? [N, K] : [K, N], b);
          const tc = upload(ctx, 'C', [M, N], new Float32Array(M * N));
          const p = denseProblem(M, N, K, { transA, transB });
          expect(gemm(ctx, ta, tb, tc, { transA, transB, variant })).toBe(await expectedVariant(variant, p));
          const want = gemmRef(p, a, b, new Float32Array(M * N));
          expectClose(`gemm ${variant}`, await download(ctx, tc), want, tol(K));
        });
      });
    }
  }

  test.each([
    [37, 65, 19],
    [128, 256, 19],
  ])(
    "bias and accumulate: C = C + A·B + bias, as a linear layer's forward and wgrad need (M=%i N=%i K=%i)",
    async (M, N, K) => {
      await gpuCase(async (ctx) => {
        const a = randomArray(M * K, 1),
          b = randomArray(K * N, 2),
          c0 = randomArray(M * N, 3),
          bias = randomArray(N, 4);
        const tc = upload(ctx, 'C', [M, N], c0);
        gemm(ctx, upload(ctx, 'A', [M, K], a), upload(ctx, 'B', [K, N], b), tc, {
          bias: upload(ctx, 'bias', [N], bias),
          accumulate: true,
          variant,
        });
        const want = gemmRef(denseProblem(M, N, K, { bias: true, accumulate: true }), a, b, c0.slice(), bias);
        expectClose('gemm bias+accumulate', await download(ctx, tc), want, tol(K));
      });
    },
  );

  test('batched with offsets, strides and a B shared by groups of batches (GQA) matches the twin', async () => {
    await gpuCase(async (ctx) => {
      // Q·Kᵀ per head on [s, heads, d] layouts: 6 query heads, 2 KV heads (divB = 3), s = 9, d = 8
      // (K = 8 and N = 9 keep a staged variant's padding under 2×, so it runs staged).
      const [s, heads, groups, d] = [9, 6, 2, 8];
      const p: GemmProblem = {
        M: s,
        N: s,
        K: d,
        batch: heads,
        offA: 2,
        sAm: heads * d,
        sAk: 1,
        bsA: d,
        offB: 1,
        sBk: 1,
        sBn: groups * d,
        bsB: d,
        divB: heads / groups,
        offC: 3,
        sCm: s,
        bsC: s * s,
        bias: false,
        accumulate: false,
      };
      const q = randomArray(2 + s * heads * d, 5),
        k = randomArray(1 + s * groups * d, 6);
      const tc = upload(ctx, 'scores', [3 + heads * s * s], new Float32Array(3 + heads * s * s));
      expect(
        gemmStrided(ctx, p, upload(ctx, 'Q', [q.length], q), upload(ctx, 'K', [k.length], k), tc, undefined, variant),
      ).toBe(variant);
      const want = gemmRef(p, q, k, new Float32Array(3 + heads * s * s));
      expectClose('batched gemm', await download(ctx, tc), want, tol(d));
    });
  });
});

describe('staged GEMMs (operands in textures)', () => {
  // The staged variants need subgroups; this adapter (SwiftShader here) has them, and the test
  // says so rather than passing vacuously where it does not.
  test('this adapter runs the staged variants', () => {
    expect(variants).toContain('staged32');
  });

  test("a problem past the texture limits runs the staged variant's fallback (quad16), and right", async () => {
    await gpuCase(async (ctx) => {
      // K = 1 stages as Kp = 8 (2 texels a row): 2049 batches × 4096 rows × 2 texels is 8197 rows
      // of 2048 texels, past maxTextureDimension2D (8192), from 32 MiB operands.
      const rows = ctx.device.limits.maxTextureDimension2D;
      const [M, batch] = [4096, Math.floor((rows * 2048) / (4096 * 2)) + 1];
      const p: GemmProblem = { ...denseProblem(M, 1, 1), batch, bsA: M, bsB: 1, bsC: M };
      const a = randomArray(batch * M, 21),
        b = randomArray(batch, 22);
      const tc = upload(ctx, 'C', [batch * M], new Float32Array(batch * M));
      const ran = gemmStrided(
        ctx,
        p,
        upload(ctx, 'A', [batch * M], a),
        upload(ctx, 'B', [batch], b),
        tc,
        undefined,
        'staged32',
      );
      expect(ran).toBe('quad16');
      expectClose('fallback gemm', await download(ctx, tc), gemmRef(p, a, b, new Float32Array(batch * M)), tol(1));
    });
  });

  test('GEMMs of different sizes in one submission share the scratch textures (grown, never overtaken) and each is right', async () => {
    await gpuCase(async (ctx) => {
      // Small, larger (the scratch grows), then small again into the grown textures, all encoded
      // before one flush: each GEMM's staging must land after the previous GEMM read the textures.
      const dims: [number, number, number][] = [
        [5, 6, 7],
        [70, 90, 41],
        [9, 4, 3],
      ];
      const runs = dims.map(([M, N, K], i) => {
        const a = randomArray(M * K, 30 + i),
          b = randomArray(K * N, 40 + i);
        const tc = upload(ctx, `C${i}`, [M, N], new Float32Array(M * N));
        gemm(ctx, upload(ctx, `A${i}`, [M, K], a), upload(ctx, `B${i}`, [K, N], b), tc, { variant: 'staged32' });
        return { want: gemmRef(denseProblem(M, N, K), a, b, new Float32Array(M * N)), tc, K };
      });
      for (const [i, r] of runs.entries()) expectClose(`staged gemm ${i}`, await download(ctx, r.tc), r.want, tol(r.K));
    });
  });

  test('staged by copy (dense, aligned, batched, rows past one texture row) beside staged by pack, each right', async () => {
    await gpuCase(async (ctx) => {
      // A: 3 batches of [70, 128] back to back from float 8 (copied: 70·32 texels a batch, 6720 in
      // all, three full texture rows and a partial one); B: [128, 66] (N off a texel: packed).
      const [M, N, K, batch] = [70, 66, 128, 3];
      const p: GemmProblem = { ...denseProblem(M, N, K), batch, offA: 8, bsA: M * K, bsB: 0, bsC: M * N };
      const a = randomArray(8 + batch * M * K, 51),
        b = randomArray(K * N, 52);
      const tc = upload(ctx, 'C', [batch * M * N], new Float32Array(batch * M * N));
      expect(
        gemmStrided(
          ctx,
          p,
          upload(ctx, 'A', [a.length], a),
          upload(ctx, 'B', [b.length], b),
          tc,
          undefined,
          'staged32',
        ),
      ).toBe('staged32');
      expectClose(
        'copy-staged gemm',
        await download(ctx, tc),
        gemmRef(p, a, b, new Float32Array(batch * M * N)),
        tol(K),
      );
    });
  });

  test('a staged GEMM (its staging, by copies or pack passes, and the GEMM) is timed as one op, from its first pass to its last', async () => {
    await gpuCase(async (ctx) => {
      const timer = new GpuTimer(ctx, 8);
      const [M, N, K] = [64, 64, 64];
      const t = (name: string, shape: number[]) => upload(ctx, name, shape, randomArray(shape[0] * shape[1], 1));
      const [a, b, c] = [t('A', [M, K]), t('B', [K, N]), t('C', [M, N])];
      timer.start();
      gemm(ctx, a, b, c, { variant: 'staged32' });
      ctx.op('mlp.fc1', () => gemm(ctx, a, b, c, { variant: 'staged32' }));
      gemm(ctx, a, b, c, { variant: 'quad16' });
      const { times } = await timer.stop();
      timer.destroy();
      expect(times.map((x) => x.op)).toEqual(['gemm:staged32', 'mlp.fc1', 'gemm:quad16']);
      times.forEach((x) => expect(x.ns).toBeGreaterThan(0));
    });
  });
});

describe('gemm input checks', () => {
  test('inner dimensions that differ are refused, naming both tensors', async () => {
    await gpuCase(async (ctx) => {
      const x = upload(ctx, 'X', [4, 8], new Float32Array(32));
      const w = upload(ctx, 'W_qkv', [6, 12], new Float32Array(72));
      const y = upload(ctx, 'Y', [4, 12], new Float32Array(48));
      expect(() => gemm(ctx, x, w, y)).toThrow(
        /gemm: tensor "W_qkv" .* has K = 6, but op\("X"\) of shape \[4, 8\] has K = 8/,
      );
    });
  });

  test('an output of the wrong shape is refused with the shape required', async () => {
    await gpuCase(async (ctx) => {
      const x = upload(ctx, 'X', [4, 8], new Float32Array(32));
      const w = upload(ctx, 'W', [8, 12], new Float32Array(96));
      const y = upload(ctx, 'Y', [12, 4], new Float32Array(48));
      expect(() => gemm(ctx, x, w, y)).toThrow(/tensor "Y" has shape \[12, 4\] but \[4, 12\] is required/);
    });
  });

  test('strides that reach past a tensor are refused before dispatch', async () => {
    await gpuCase(async (ctx) => {
      const p = denseProblem(4, 4, 4);
      const a = upload(ctx, 'A', [15], new Float32Array(15));
      const b = upload(ctx, 'B', [16], new Float32Array(16));
      const c = upload(ctx, 'C', [16], new Float32Array(16));
      expect(() => gemmStrided(ctx, p, a, b, c)).toThrow(/reaches element 15 of tensor "A" of shape \[15\]/);
    });
  });

  test('a batch beyond maxComputeWorkgroupsPerDimension is refused with the limit', async () => {
    await gpuCase(async (ctx) => {
      const batch = ctx.device.limits.maxComputeWorkgroupsPerDimension + 1;
      const p: GemmProblem = { ...denseProblem(1, 1, 1), batch, bsA: 1, bsB: 1, bsC: 1 };
      const t = (name: string) => createTensor(ctx.device, name, [batch]);
      expect(() => gemmStrided(ctx, p, t('A'), t('B'), t('scores'), undefined, 'rb4')).toThrow(
        new RegExp(
          `needs ${batch} workgroups along batch, more than this device's maxComputeWorkgroupsPerDimension of ${batch - 1}`,
        ),
      );
    });
  });

  test('a tensor beyond maxStorageBufferBindingSize is refused before allocation, naming it', async () => {
    const device = await testDevice();
    const rows = Math.floor(device.limits.maxStorageBufferBindingSize / 4 / 1024) + 1;
    expect(() => createTensor(device, 'logits', [rows, 1024])).toThrow(
      new RegExp(
        `tensor "logits" of shape \\[${rows}, 1024\\] needs ${rows * 4096} bytes, more than this device's maxStorageBufferBindingSize`,
      ),
    );
  });
});

describe('gemm tuner', () => {
  test('tuning decides each shape class once (every verified variant timed unless launch-bound) and gemm then runs the winner', async () => {
    await gpuCase(async (ctx) => {
      const problems = [denseProblem(200, 300, 64), denseProblem(150, 260, 100), denseProblem(4, 256, 64)];
      const tunings = await tuneGemm(ctx, problems);
      expect(tunings.map((t) => t.shapeClass)).toEqual(['M8N9Km', 'MsN8Km'].map((c) => `${c}nn`));
      for (const t of tunings) {
        const timed = Object.keys(t.gflops);
        if (t.launchBound) {
          // Stopped at the cheapest variant: it ran within two dispatch floors.
          expect(timed).toEqual([t.chosen]);
          expect(
            gemmFlops(denseProblem(t.timedDims.M, t.timedDims.N, t.timedDims.K)) / t.gflops[t.chosen]! / 1e6,
          ).toBeLessThanOrEqual(2 * t.dispatchMs);
        } else {
          expect(timed.length).toBeGreaterThanOrEqual(2);
          // Timed at full size: the class's first problem itself.
          expect(t.fullSize).toBe(true);
        }
        // The fastest is always among the tied, and the winner is one of them (the cheapest to compile).
        const best = Object.entries(t.gflops).sort((x, y) => y[1] - x[1])[0][0];
        expect(t.tied).toContain(best);
        expect(t.tied).toContain(t.chosen);
      }
      // Whether a class is launch-bound depends on the adapter's speed and the machine's load, so each
      // class above is checked for the path it took; none is required to take either.
      const [M, N, K] = [150, 260, 100];
      const a = upload(ctx, 'A', [M, K], randomArray(M * K, 1)),
        b = upload(ctx, 'B', [K, N], randomArray(K * N, 2));
      expect(gemm(ctx, a, b, upload(ctx, 'C', [M, N], new Float32Array(M * N)))).toBe(tunings[0].chosen);
      expect(await tuneGemm(ctx, problems)).toEqual([]);
    });
  });

  test('tiny shape classes (classroom-sized GEMMs): a launch-bound one is decided by the cheapest verified variant alone, any other times every variant', async () => {
    await gpuCase(async (ctx) => {
      // Whether a class stops early depends on timings (a busy machine can stretch the cheapest
      // variant past two floors; the decision itself is unit-tested with fixed figures), so each
      // of four tiny classes is checked for the path it took.
      const tiny = [
        [false, false],
        [false, true],
        [true, false],
        [true, true],
      ].map(([transA, transB]) => denseProblem(8, 16, 12, { transA, transB }));
      const tunings = await tuneGemm(ctx, tiny);
      expect(tunings.map((t) => t.shapeClass)).toEqual(['nn', 'nt', 'tn', 'tt'].map((o) => `MsNsKs${o}`));
      for (const t of tunings) {
        expect(t.dispatchMs).toBeGreaterThan(0);
        if (t.launchBound) {
          expect(t).toMatchObject({ chosen: variants[0], tied: [variants[0]] });
          expect(Object.keys(t.gflops)).toEqual([variants[0]]);
        } else {
          expect(Object.keys(t.gflops).length).toBeGreaterThanOrEqual(2);
        }
        expect(t.tied).toContain(t.chosen);
      }
      const bound = tunings.filter((t) => t.launchBound).length;
      console.log(
        `tiny GEMM classes decided by the cheapest variant alone: ${bound} of ${tunings.length} (dispatch floor ${tunings[0].dispatchMs.toFixed(3)} ms)`,
      );
    });
  });
});
