import { uniformThen, type KernelContext } from './context.ts';
import { gemmStaging, stagedCopyOffset, stagedRows, stagedWidth, stagingRefusal } from '../reference/gemm-staging.ts';
import { gemmVariants, pipelineConstants, type GemmVariant } from './gemm-variants.ts';
import { chosenGemmVariant } from './gemm-choice.ts';
import { checkWorkgroups, expectShape } from './limits.ts';
import { formatShape, numel } from '../core/shape.ts';
import { packUniform } from '../core/wgsl-layout.ts';
import { uniformLayoutOf } from './shader-source.ts';
import { denseProblem, type GemmProblem } from '../reference/gemm.ts';
import type { GpuTensor } from './tensor.ts';

/** Options of a dense GEMM: transposes are strides, not copies; bias [N]; accumulate: C += … */
export interface GemmOptions {
  readonly transA?: boolean;
  readonly transB?: boolean;
  readonly bias?: GpuTensor;
  readonly accumulate?: boolean;
  /** Force a tiling instead of the tuner's choice. */
  readonly variant?: GemmVariant;
}

/**
 * C[M,N] = op(A)·op(B) (+ bias[N]) (+ C): A is [M,K] ([K,M] with transA), B is [K,N] ([N,K] with
 * transB). Linear layers: Y = X·W is gemm(X, W, Y); dX = dY·Wᵀ is transB; dW = Xᵀ·dY is transA
 * with accumulate for gradient accumulation. Returns the variant that ran.
 */
export function gemm(
  ctx: KernelContext,
  a: GpuTensor,
  b: GpuTensor,
  c: GpuTensor,
  opts: GemmOptions = {},
): GemmVariant {
  const { transA = false, transB = false } = opts;
  for (const t of [a, b, c]) {
    if (t.shape.length !== 2)
      throw new Error(
        `gemm: tensor "${t.name}" has shape ${formatShape(t.shape)}; gemm takes 2-D tensors (use gemmStrided for batches).`,
      );
  }
  const [M, K] = transA ? [a.shape[1], a.shape[0]] : [a.shape[0], a.shape[1]];
  const [kb, N] = transB ? [b.shape[1], b.shape[0]] : [b.shape[0], b.shape[1]];
  if (kb !== K) {
    const bk = transB ? `[N, K] = ${formatShape(b.shape)}` : `[K, N] = ${formatShape(b.shape)}`;
    throw new Error(
      `gemm: tensor "${b.name}" (${bk}) has K = ${kb}, but op("${a.name}") of shape ${formatShape(a.shape)} has K = ${K}; inner dimensions must match.`,
    );
  }
  expectShape('gemm', c.name, c.shape, [M, N], `op(${a.name})·op(${b.name}) is [M, N]`);
  if (opts.bias) expectShape('gemm', opts.bias.name, opts.bias.shape, [N], 'bias is [N]');
  const problem = denseProblem(M, N, K, { transA, transB, bias: !!opts.bias, accumulate: opts.accumulate });
  return gemmStrided(ctx, problem, a, b, c, opts.bias, opts.variant);
}

/** Index one past the last element `p` reaches in each operand (the elements each tensor must hold). */
export function gemmExtents(p: GemmProblem): { a: number; b: number; c: number } {
  const last = (off: number, terms: [number, number][]) => off + terms.reduce((s, [n, st]) => s + (n - 1) * st, 0) + 1;
  return {
    a: last(p.offA, [
      [p.batch, p.bsA],
      [p.M, p.sAm],
      [p.K, p.sAk],
    ]),
    b: last(p.offB, [
      [Math.ceil(p.batch / p.divB), p.bsB],
      [p.K, p.sBk],
      [p.N, p.sBn],
    ]),
    c: last(p.offC, [
      [p.batch, p.bsC],
      [p.M, p.sCm],
      [p.N, 1],
    ]),
  };
}

/**
 * Batched strided GEMM (see GemmProblem): attention runs one per head as a batch. Every operand's
 * reach is checked against its tensor before dispatch, so nothing reads or writes out of range.
 */
export function gemmStrided(
  ctx: KernelContext,
  p: GemmProblem,
  a: GpuTensor,
  b: GpuTensor,
  c: GpuTensor,
  bias?: GpuTensor,
  variant?: GemmVariant,
): GemmVariant {
  if (p.M === 0 || p.N === 0 || p.batch === 0) return variant ?? 'naive';
  if (p.divB < 1 || !Number.isInteger(p.divB)) throw new Error(`gemm: divB must be a positive integer, got ${p.divB}.`);
  const reach = gemmExtents(p);
  for (const [t, need] of [
    [a, p.K === 0 ? 0 : reach.a],
    [b, p.K === 0 ? 0 : reach.b],
    [c, reach.c],
  ] as const) {
    if (need > numel(t.shape)) {
      throw new Error(
        `gemm: the problem M=${p.M}, N=${p.N}, K=${p.K}, batch=${p.batch} reaches element ${need - 1} of tensor "${t.name}" of shape ${formatShape(t.shape)} (${numel(t.shape)} elements); check its shape and strides.`,
      );
    }
  }
  if (p.bias && (!bias || numel(bias.shape) < p.N)) {
    throw new Error(
      `gemm: bias requested but tensor ${bias ? `"${bias.name}" of shape ${formatShape(bias.shape)}` : 'is missing'}; bias is [N] = [${p.N}].`,
    );
  }
  const wanted = variant ?? chosenGemmVariant(ctx.device, p);
  // A staged variant stages p unless stagingRefusal says no; then its fallback runs p.
  const staged = gemmVariants[wanted].staged;
  const layout = staged ? gemmStaging(p) : undefined;
  const staging = layout && !stagingRefusal(p, layout, ctx.device.limits) ? layout : undefined;
  const chosen = staged && !staging ? staged.fallback : wanted;
  const v = gemmVariants[chosen];
  const wg: [number, number, number] = [Math.ceil(p.N / v.tileN), Math.ceil(p.M / v.tileM), p.batch];
  checkWorkgroups(ctx.device.limits, 'gemm', c.name, c.shape, wg, [`N/${v.tileN}`, `M/${v.tileM}`, 'batch']);
  // Params by member name, laid out as the variant's WGSL declares it; only the subgroup shader has Kp.
  const uniform = uniformLayoutOf(v.code, 'Params', `gemm variant ${chosen}`);
  const { M, N, K, batch, offA, sAm, sAk, bsA, offB, sBk, sBn, bsB, divB, offC, sCm, bsC } = p;
  const values = { M, N, K, batch, offA, sAm, sAk, bsA, offB, sBk, sBn, bsB, divB, offC, sCm, bsC };
  const flags = (p.bias ? 1 : 0) | (p.accumulate ? 2 : 0);
  const hasKp = uniform.members.some((m) => m.name === 'Kp');
  const params = ctx.uniform(
    packUniform(uniform, { ...values, flags, ...(hasKp && { Kp: staging?.Kp ?? 0 }) }, `gemm:${chosen}`),
  );
  const pipeline = ctx.pipeline(v.label, v.code, v.entryPoint, pipelineConstants(v, p));
  const tail = [c.buffer, bias?.buffer ?? ctx.placeholder()];
  return ctx.op(`gemm:${chosen}`, () => {
    if (staged && staging) {
      // A as X(m, k) and B as X(k, n): a copy where the buffer already is that layout (the
      // empty pass first opens the op's time span, so the copies count in it), else gemm-pack.wgsl.
      const copyA = stagedCopyOffset(p, 'A');
      const copyB = stagedCopyOffset(p, 'B');
      if (copyA !== undefined || copyB !== undefined) ctx.mark(`gemm:${chosen}`);
      const at = stageOperand(ctx, 'gemm:staged A', a, staging.a, copyA, staged.pack, [
        p.M,
        p.K,
        p.offA,
        p.sAm,
        p.sAk,
        p.bsA,
        p.M,
        staging.Kp / 4,
      ]);
      const bt = stageOperand(ctx, 'gemm:staged B', b, staging.b, copyB, staged.pack, [
        p.K,
        p.N,
        p.offB,
        p.sBk,
        p.sBn,
        p.bsB,
        staging.Kp,
        Math.ceil(p.N / 4),
      ]);
      ctx.dispatch(
        `gemm:${chosen}`,
        pipeline,
        [
          { binding: 0, buffer: params },
          { binding: 3, buffer: tail[0] },
          { binding: 4, buffer: tail[1] },
          { binding: 5, view: at },
          { binding: 6, view: bt },
        ],
        wg,
      );
    } else {
      ctx.dispatch(`gemm:${chosen}`, pipeline, uniformThen(params, [a.buffer, b.buffer, ...tail]), wg);
    }
    return chosen;
  });
}

/**
 * Stages X_z(r, c) = X[off + z·bs + r·sR + c·sC] (R real rows of RP per layer, C columns in CQ
 * texels per row) into the scratch texture `key` as `texels` texels in row-major order, zero past
 * R and C: copied from float `copyFrom` of the buffer where it already is that layout (see
 * stagedCopyOffset), else by gemm-pack.wgsl. Returns the view the GEMM reads.
 */
function stageOperand(
  ctx: KernelContext,
  key: string,
  x: GpuTensor,
  texels: number,
  copyFrom: number | undefined,
  packCode: string,
  [R, C, off, sR, sC, bs, RP, CQ]: readonly number[],
): GPUTextureView {
  const rows = stagedRows(texels);
  const texture = ctx.scratchTexture(
    key,
    [stagedWidth, rows, 1],
    'rgba32float',
    GPUTextureUsage.STORAGE_BINDING | GPUTextureUsage.TEXTURE_BINDING | GPUTextureUsage.COPY_DST,
  );
  if (copyFrom !== undefined) {
    // Whole rows of 2048 texels, then the last partial row.
    const full = Math.floor(texels / stagedWidth);
    const rest = texels - full * stagedWidth;
    const enc = ctx.commandEncoder();
    const bytesPerRow = 16 * stagedWidth;
    if (full > 0)
      enc.copyBufferToTexture({ buffer: x.buffer, offset: 4 * copyFrom, bytesPerRow }, { texture }, [
        stagedWidth,
        full,
        1,
      ]);
    if (rest > 0)
      enc.copyBufferToTexture(
        { buffer: x.buffer, offset: 4 * copyFrom + full * bytesPerRow, bytesPerRow },
        { texture, origin: [0, full, 0] },
        [rest, 1, 1],
      );
    return texture.createView();
  }
  const layout = uniformLayoutOf(packCode, 'PackParams', 'shaders/gemm-pack.wgsl');
  const params = ctx.uniform(packUniform(layout, { R, C, off, sR, sC, bs, RP, CQ, count: texels }, key));
  const pipeline = ctx.pipeline('gemm-pack', packCode, 'pack');
  const view = texture.createView();
  ctx.dispatch(
    key,
    pipeline,
    [
      { binding: 0, buffer: params },
      { binding: 1, buffer: x.buffer },
      { binding: 2, view },
    ],
    [stagedWidth / 64, rows, 1],
  );
  return view;
}
