import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { configFromPreset, type LayerConfig } from '../../../../src/parallel/config.ts';
import { makePlan } from '../../../../src/parallel/plan.ts';
import type { LayerPlan } from '../../../../src/parallel/plan-types.ts';
import { defaultKernelOptions, type KernelOptions } from '../../../../src/projection/layer/kernel-options.ts';
import {
  linearProducts,
  modelGemmFlops,
  pricedFlops,
  pricedOps,
  type PricedOp,
} from '../../../../src/projection/layer/priced-ops.ts';
import { projectLayer, projectOps } from '../../../../src/projection/layer/projected-layer.ts';

const h100 = systems['dgx-h100'];
/** Resolved kernel switches (pricedOps takes `auto` attention resolved for a GPU): unfused unless `o` says. */
const k = (o: Partial<KernelOptions>): KernelOptions => ({
  ...defaultKernelOptions,
  attentionBackend: 'unfused',
  ...o,
});
const plain = k({});
const plan = async (c: Partial<LayerConfig>): Promise<LayerPlan> =>
  (await makePlan(configFromPreset('llama-gqa', c))).plan;
const gemmFlopsOf = (p: LayerPlan, product: string): number =>
  p.ops.reduce((a, o) => a + (o.kind === 'gemm' && o.gemm.site.product === product ? o.gemm.flops : 0), 0);

describe('pricedOps: the plan as the projected job runs it', () => {
  it('prices the plan as it is by default', async () => {
    const p = await plan({ tp: 2, sp: true });
    const priced = pricedOps(p, 'bf16', plain);
    expect(priced.every((x) => x.rule === 'plan')).toBe(true);
    expect(new Set(priced.map((x) => x.planIndex)).size).toBe(p.ops.length);
  });

  it('gradient accumulation fusion: each linear wgrad accumulates into main_grad (fp32 under bf16, fp16 under fp16)', async () => {
    const p = await plan({ tp: 2 });
    const wgrads = p.ops.filter((o) => o.kind === 'gemm' && o.gemm.site.computes === 'dB');
    const accumulate = (dtype: 'bf16' | 'fp16'): PricedOp[] =>
      pricedOps(p, dtype, k({ gradAccumulationFusion: true })).filter((x) => x.rule === 'grad-accumulation');
    const linearWgrads = wgrads.filter((o) => o.kind === 'gemm' && linearProducts.has(o.gemm.site.product));
    expect(linearWgrads.length).toBeGreaterThan(0);
    expect(accumulate('bf16').map((x) => x.planIndex)).toEqual(linearWgrads.map((o) => o.index));
    for (const x of accumulate('bf16')) expect(x.cost.kind === 'gemm' && x.cost.shape.accumulateBytes).toBe(4);
    for (const x of accumulate('fp16')) expect(x.cost.kind === 'gemm' && x.cost.shape.accumulateBytes).toBe(2);
    expect(pricedOps(p, 'bf16', plain).some((x) => x.rule === 'grad-accumulation')).toBe(false);
  });

  it("Megatron's cross entropy: the logits upcast to fp32, 52 bytes per logit in bf16 in nine kernels, 40 in seven in fp32", async () => {
    // s 8, b 2 (configFromPreset's), vocab 64 at t = 2: E = s·b·V/t logits per rank, R = s·b rows.
    // .float() 2+4, max 4 (+ 4 per row), sub 8, exp 8, sum 4 (+ 4 per row), div 8, gather 12 per row,
    // mul 8, cast back 4+2: 52·E + 20·R bytes in bf16; fp32 has no casts: 40·E + 20·R.
    const p = await plan({ tp: 2, vocab: 64 });
    const logits = p.ops.find((o) => o.kind === 'kernel' && o.kernel === 'ceLocalMax')!;
    const E = logits.inShapes[0]!.reduce((a, x) => a * x, 1);
    const R = logits.outShape.reduce((a, x) => a * x, 1);
    const bytes = (dtype: 'bf16' | 'fp32'): { bytes: number; kernels: number } => {
      const ce = pricedOps(p, dtype, k({ crossEntropy: 'megatron' })).filter(
        (x) => x.rule === 'megatron-cross-entropy',
      );
      return { bytes: ce.reduce((a, x) => a + (x.cost.kind === 'memory' ? x.cost.bytes : 0), 0), kernels: ce.length };
    };
    expect(bytes('bf16')).toEqual({ bytes: 52 * E + 20 * R, kernels: 9 });
    expect(bytes('fp32')).toEqual({ bytes: 40 * E + 20 * R, kernels: 7 });
    // The default keeps the plan's own kernels.
    expect(pricedOps(p, 'bf16', plain).some((x) => x.rule === 'megatron-cross-entropy')).toBe(false);
  });

  it("Megatron's fused cross entropy (--cross-entropy-loss-fusion): 28 bytes per logit in bf16 in five kernels", async () => {
    // Same E and R. Each jit_fuser function one pass: .float() + max 2+4 (+ 4 per row);
    // sub + exp + sum 4+4 (+ 4 per row); div 4+4; gather 12 per row; softmax read, mul, bf16 written 4+2:
    // 28·E + 20·R in bf16; in fp32 .float() is the tensor itself (read 4) and the gradient still bf16: 26·E + 20·R.
    const p = await plan({ tp: 2, vocab: 64 });
    const logits = p.ops.find((o) => o.kind === 'kernel' && o.kernel === 'ceLocalMax')!;
    const E = logits.inShapes[0]!.reduce((a, x) => a * x, 1);
    const R = logits.outShape.reduce((a, x) => a * x, 1);
    const bytes = (dtype: 'bf16' | 'fp32'): { bytes: number; kernels: number } => {
      const ce = pricedOps(p, dtype, k({ crossEntropy: 'megatron-fused' })).filter(
        (x) => x.rule === 'megatron-cross-entropy',
      );
      return { bytes: ce.reduce((a, x) => a + (x.cost.kind === 'memory' ? x.cost.bytes : 0), 0), kernels: ce.length };
    };
    expect(bytes('bf16')).toEqual({ bytes: 28 * E + 20 * R, kernels: 5 });
    expect(bytes('fp32')).toEqual({ bytes: 26 * E + 20 * R, kernels: 5 });
  });

  it("Transformer Engine's cross entropy (--cross-entropy-fusion-impl te): 22 bytes per logit in bf16 in four kernels", async () => {
    // Same E and R. online_softmax_kernel reads the logits once (2) and writes m, d, X_y (12 per row);
    // cross_entropy_kernel reads them again (2) and writes the fp32 gradient (4), the row's statistics
    // read and its loss written (16 per row); backward element_mul_kernel 4+4 in place, autograd's cast to
    // bf16 4+2: 22·E + 28·R. In fp32 no cast: 20·E + 28·R in three kernels.
    const p = await plan({ tp: 2, vocab: 64 });
    const logits = p.ops.find((o) => o.kind === 'kernel' && o.kernel === 'ceLocalMax')!;
    const E = logits.inShapes[0]!.reduce((a, x) => a * x, 1);
    const R = logits.outShape.reduce((a, x) => a * x, 1);
    const bytes = (dtype: 'bf16' | 'fp32'): { bytes: number; kernels: number } => {
      const ce = pricedOps(p, dtype, k({ crossEntropy: 'te-fused' })).filter(
        (x) => x.rule === 'megatron-cross-entropy',
      );
      return { bytes: ce.reduce((a, x) => a + (x.cost.kind === 'memory' ? x.cost.bytes : 0), 0), kernels: ce.length };
    };
    expect(bytes('bf16')).toEqual({ bytes: 22 * E + 28 * R, kernels: 4 });
    expect(bytes('fp32')).toEqual({ bytes: 20 * E + 28 * R, kernels: 3 });
  });

  it('GPT: drops the gate GEMMs, prices GeLU, LayerNorm, learned positions, biases and dropout; no RoPE', async () => {
    const p = await plan({ tp: 2 });
    const gpt = pricedOps(p, 'bf16', k({ layerArch: 'gpt' }));
    const ruleOf = (i: number): string[] => gpt.filter((x) => x.planIndex === i).map((x) => x.rule);
    for (const op of p.ops) {
      if (op.kind === 'gemm' && op.gemm.site.product === 'gate') expect(ruleOf(op.index)).toEqual([]);
      if (op.kind === 'kernel' && (op.kernel === 'rope' || op.kernel === 'ropeBackward'))
        expect(ruleOf(op.index)).toEqual([]);
      if (op.kind === 'kernel' && op.kernel === 'swiglu') expect(ruleOf(op.index)).toEqual(['gpt-gelu']);
      if (op.kind === 'kernel' && op.kernel === 'softmax') expect(ruleOf(op.index)).toEqual(['plan', 'gpt-dropout']);
    }
    // FLOPs from the transformed list: the Llama plan less its gate GEMMs (fprop, dgrad, wgrad).
    const llama = modelGemmFlops(p, 'bf16', defaultKernelOptions);
    expect(modelGemmFlops(p, 'bf16', k({ layerArch: 'gpt' }))).toBe(llama - gemmFlopsOf(p, 'gate'));
    expect(gpt.filter((x) => x.rule === 'gpt-bias').length).toBeGreaterThan(0);
  });

  it('flash: one forward kernel per Q·Kᵀ GEMM and one backward per dP GEMM, no softmax, FLOPs halved by the causal mask', async () => {
    const p = await plan({ tp: 1 });
    const priced = pricedOps(p, 'bf16', k({ attentionBackend: 'flash' }));
    const flash = priced.filter((x) => x.cost.kind === 'flash');
    const count = (product: string, computes: string): number =>
      p.ops.filter((o) => o.kind === 'gemm' && o.gemm.site.product === product && o.gemm.site.computes === computes)
        .length;
    expect(flash.filter((x) => x.cost.kind === 'flash' && x.cost.pass === 'forward').length).toBe(count('scores', 'C'));
    expect(flash.filter((x) => x.cost.kind === 'flash' && x.cost.pass === 'backward').length).toBe(
      count('context', 'dA'),
    );
    const scoresC = p.ops.reduce(
      (a, o) =>
        a + (o.kind === 'gemm' && o.gemm.site.product === 'scores' && o.gemm.site.computes === 'C' ? o.gemm.flops : 0),
      0,
    );
    // Forward: Q·Kᵀ + P·V = 2 × scores, × 0.5 causal; backward 2.5× that.
    expect(pricedFlops(p, priced).attention).toBeCloseTo(scoresC * (1 + 2.5), 6);
    expect(
      priced.some(
        (x) =>
          x.cost.kind === 'memory' &&
          p.ops[x.planIndex]!.kind === 'kernel' &&
          (p.ops[x.planIndex] as { kernel: string }).kernel === 'softmax',
      ),
    ).toBe(false);
    // Model FLOPs do not change with the backend.
    expect(modelGemmFlops(p, 'bf16', k({ attentionBackend: 'flash' }))).toBe(
      modelGemmFlops(p, 'bf16', defaultKernelOptions),
    );
  });

  it('fp8: the linear layers in fp8 with a cast of A per fprop and dgrad; logits and attention stay bf16', async () => {
    const p = await plan({ tp: 1 });
    const priced = pricedOps(p, 'bf16', k({ fp8: 'hybrid' }));
    let fp8Gemms = 0;
    let castsNeeded = 0;
    for (const x of priced) {
      if (x.cost.kind !== 'gemm') continue;
      const op = p.ops[x.planIndex]!;
      if (op.kind !== 'gemm') continue;
      const linear = !['scores', 'context', 'logits'].includes(op.gemm.site.product);
      expect(x.cost.precision).toBe(linear ? 'fp8' : 'bf16');
      if (linear) fp8Gemms++;
      if (linear && op.gemm.site.computes !== 'dB') castsNeeded++;
    }
    expect(fp8Gemms).toBeGreaterThan(0);
    expect(priced.filter((x) => x.rule === 'fp8-cast').length).toBe(castsNeeded);
  });

  it("each recipe's casts move castBytesPerElement per element; NVFP4 runs the linear GEMMs in fp4", async () => {
    const p = await plan({ tp: 1 });
    const castBytes = (o: Partial<KernelOptions>): number =>
      pricedOps(p, 'bf16', k(o)).reduce(
        (a, x) => a + (x.rule === 'fp8-cast' && x.cost.kind === 'memory' ? x.cost.bytes : 0),
        0,
      );
    const delayed = castBytes({ fp8: 'hybrid' });
    // bf16 source (2 B): delayed 2 + 2; tensorwise 2·2 + 2 (amax pass first); mxfp8 2 + 2 + 2/32; nvfp4 3·2 + 1 + 2/16.
    expect(castBytes({ fp8: 'hybrid', fp8Recipe: 'tensorwise' }) / delayed).toBeCloseTo(6 / 4, 12);
    expect(castBytes({ fp8: 'e4m3', fp8Recipe: 'mxfp8' }) / delayed).toBeCloseTo((4 + 2 / 32) / 4, 12);
    expect(castBytes({ fp4: 'e2m1' }) / delayed).toBeCloseTo((7 + 2 / 16) / 4, 12);
    const fp4 = pricedOps(p, 'bf16', k({ fp4: 'e2m1' }));
    const precisions = new Set(fp4.flatMap((x) => (x.cost.kind === 'gemm' ? [x.cost.precision] : [])));
    expect([...precisions].sort()).toEqual(['bf16', 'fp4']);
  });
});

describe('projectOps with kernel options', () => {
  it('flash attention beats materialized s×s scores at seq 4096 on H100', async () => {
    const p = await plan({ s: 4096, h: 4096, heads: 32, groups: 8, ffn: 14336, vocab: 0, tp: 1 });
    const m = { system: h100, dtype: 'bf16' as const };
    const unfused = projectLayer(p, { ...m, kernels: plain }, true).stepMs;
    const flash = projectLayer(p, { ...m, kernels: k({ attentionBackend: 'flash' }) }, true).stepMs;
    expect(flash).toBeLessThan(0.9 * unfused);
    // Megatron's default, auto, is cuDNN's fused attention on Hopper (Transformer Engine's preference).
    const auto = projectLayer(p, m, true).stepMs;
    expect(auto).toBe(projectLayer(p, { ...m, kernels: k({ attentionBackend: 'fused' }) }, true).stepMs);
    // And unfused on Volta, where Transformer Engine cannot run.
    const v100 = { system: systems['v100-pcie-8'], dtype: 'fp16' as const };
    expect(projectLayer(p, v100, true).stepMs).toBe(projectLayer(p, { ...v100, kernels: plain }, true).stepMs);
  });

  it('CUDA graphs remove the host gaps that eager dispatch leaves between short kernels', async () => {
    // The classroom-sized layer on H100: every kernel is a few µs, shorter than its 10 µs dispatch.
    const p = (await makePlan(configFromPreset('classroom', { tp: 1 }))).plan;
    const m = { system: h100, dtype: 'bf16' as const };
    const eager = projectOps(p, m);
    const graphs = projectOps(p, { ...m, kernels: k({ cudaGraphImpl: 'local' }) });
    const sum = (xs: readonly number[]): number => xs.reduce((a, x) => a + x, 0);
    expect(sum(eager.hostGapMs)).toBeGreaterThan(0);
    expect(sum(graphs.hostGapMs)).toBe(0);
    expect(projectLayer(p, { ...m, kernels: k({ cudaGraphImpl: 'local' }) }, true).stepMs).toBeLessThan(
      0.5 * projectLayer(p, m, true).stepMs,
    );
  });

  it('charges the async dgrad collectives to the wgrad GEMMs under them (overlap is not free)', async () => {
    const p = await plan({ s: 2048, h: 4096, heads: 32, groups: 8, ffn: 14336, vocab: 0, tp: 8, sp: true });
    const m = { system: h100, dtype: 'bf16' as const };
    const on = projectOps(p, m, true);
    const off = projectOps(p, m, false);
    const sum = (xs: readonly number[]): number => xs.reduce((a, x) => a + x, 0);
    expect(sum(on.overlapCostMs)).toBeGreaterThan(0);
    expect(sum(off.overlapCostMs)).toBe(0);
    for (const op of p.ops) if (on.overlapCostMs[op.index]! > 0) expect(op.overlap.underAsync).toBe(true);
  });

  it('--tp-comm-overlap hides most TP communication under the GEMMs, for a slower GEMM', async () => {
    const p = await plan({ s: 4096, h: 8192, heads: 64, groups: 8, ffn: 28672, vocab: 0, tp: 8, sp: true });
    const m = { system: h100, dtype: 'bf16' as const };
    const plain = projectLayer(p, { ...m, kernels: k({}) }, true);
    const tpo = projectLayer(p, { ...m, kernels: k({ tpCommOverlap: true }) }, true);
    const exposed = (t: typeof plain): number => Math.max(...t.totals.map((r) => r.exposedMs));
    expect(exposed(tpo)).toBeLessThan(0.5 * exposed(plain));
    expect(tpo.stepMs).toBeLessThan(plain.stepMs);
    const cost = projectOps(p, { ...m, kernels: k({ tpCommOverlap: true }) }, true).overlapCostMs;
    expect(cost.some((c) => c > 0)).toBe(true);
    const noSp = await plan({ tp: 2, sp: false });
    expect(() => projectOps(noSp, { ...m, kernels: k({ tpCommOverlap: true }) })).toThrow(
      /--tp-comm-overlap needs .*--sp/,
    );
  });
});
