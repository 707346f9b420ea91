import { describe, expect, it } from 'vitest';
import { peakFlops } from '../../../../src/hardware/gpus.ts';
import { systems } from '../../../../src/hardware/systems.ts';
import { megatronFlops } from '../../../../src/megatron/megatron-flops.ts';
import { publishedRuns, publishedStepS } from '../../../../src/megatron/published-runs.ts';
import { comparePublished, type PublishedComparison } from '../../../../src/projection/studies/published-comparison.ts';

/**
 * The projection against published Megatron-LM runs it was never fitted to. The test checks the
 * dataset and the mapping and prints projected vs published for every run; the errors are
 * reported as they come out (docs/projection.md), not asserted into a band.
 */
describe('published Megatron-LM runs', () => {
  it('holds ≥ 10 runs, ≥ 3 with pipeline parallelism and ≥ 3 on H100 with the overlaps, each self-consistent', () => {
    expect(publishedRuns.length).toBeGreaterThanOrEqual(10);
    expect(publishedRuns.filter((r) => r.layout.pp > 1).length).toBeGreaterThanOrEqual(3);
    const h100 = publishedRuns.filter(
      (r) => systems[r.system].gpu.name === 'h100-sxm' && r.layout.overlapGradReduce && r.layout.overlapParamGather,
    );
    expect(h100.length).toBeGreaterThanOrEqual(3);
    expect(new Set(publishedRuns.map((r) => r.id)).size).toBe(publishedRuns.length);
    for (const r of publishedRuns) {
      const { tp, pp, cp } = r.layout;
      expect(r.gpus % (tp * pp * cp), r.id).toBe(0);
      expect(r.model.layers % pp, r.id).toBe(0);
      expect(r.model.heads % tp, r.id).toBe(0);
      expect(r.globalBatch % (r.layout.microBatch * (r.gpus / (tp * pp * cp))), r.id).toBe(0);
      expect(r.source.citation.length, r.id).toBeGreaterThan(0);
    }
  });

  it("recovers the README's H100 MFU from its own FLOP count (1.7B: 408.8 TFLOP/s = 41% of 989 TFLOP/s)", () => {
    const r = publishedRuns.find((x) => x.id === 'megatron-h100-1.7b')!;
    // 12·B·s·L·h²·(2 + s/h + 4 + V/(2Lh)) with B 192, s 4096, L 24, h 2048, V 131072: hand-expanded.
    const hand = 12 * 192 * 4096 * 24 * 2048 ** 2 * (2 + 2 + 4 + 131072 / (2 * 24 * 2048));
    expect(megatronFlops({ ...r.model, globalBatch: 192, swiglu: false })).toBe(hand);
    expect((r.published.tflopsPerGpu * 1e12) / peakFlops(systems[r.system].gpu, 'bf16')).toBeCloseTo(0.41, 2); // 0.4131
    expect(publishedStepS(r)).toBeCloseTo(hand / (48 * 408.8e12), 12);
  });

  // 19 projections, pipelines up to p = 64 with m = 48: ≈ 8 s alone on 2 cores, so 120 s under load.
  it('maps every run flag by flag and projects every run, leaving out only what it lists', async () => {
    const rows: PublishedComparison[] = [];
    for (const run of publishedRuns) rows.push(await comparePublished(run));
    const pct = (x: number | undefined): string =>
      x === undefined ? '—' : `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}%`;
    const lines = rows.map((c) =>
      [
        c.run.id.padEnd(22),
        `t${c.run.layout.tp} p${c.run.layout.pp}`.padEnd(7),
        `${c.publishedStepS.toFixed(2)} s`.padStart(9),
        `${c.projectedStepS.toFixed(2)} s`.padStart(9),
        pct(c.stepError).padStart(7),
        `${c.projectedMemoryGiB.toFixed(1)} GiB${c.oom ? ' OOM' : ''}`,
        c.mapped.unexpressed.length ? `without ${c.mapped.unexpressed.map((u) => u.flag).join(', ')}` : '',
      ].join('  '),
    );
    const errors = rows.map((c) => Math.abs(c.stepError));
    console.log(
      `run                     layout   published  projected  error  memory\n${lines.join('\n')}\n` +
        `${rows.length} runs; mean |error| ${(100 * (errors.reduce((a, e) => a + e, 0) / errors.length)).toFixed(1)}%, ` +
        `largest ${(100 * Math.max(...errors)).toFixed(1)}%`,
    );
    for (const c of rows) {
      // Complete mapping: every layout flag is expressed (--tp-comm-overlap through the kernels, with SP),
      // or listed (--tp-comm-overlap without SP, which Megatron rejects).
      const l = c.run.layout;
      expect(c.mapped.unexpressed.length, c.run.id).toBe(l.tpCommOverlap && !l.sp ? 1 : 0);
      expect(c.mapped.kernels, c.run.id).toMatchObject({
        layerArch: c.run.model.layerArch,
        attentionBackend: c.run.flashAttention
          ? systems[c.run.system].gpu.arch === 'ampere'
            ? 'flash'
            : 'fused'
          : 'unfused',
        tpCommOverlap: l.tpCommOverlap && l.sp,
      });
      expect(c.mapped.setup).toMatchObject({
        tp: l.tp,
        pp: l.pp,
        vpp: l.vpp,
        cp: l.cp,
        sp: l.sp,
        distributedOptimizer: l.distributedOptimizer,
        overlapGradReduce: l.overlapGradReduce,
        overlapParamGather: l.overlapParamGather,
        layers: c.run.model.layers,
        gpus: c.run.gpus,
        globalBatch: c.run.globalBatch,
      });
      // The run's Megatron-Core release where its behaviour differs (megatron-release.ts).
      expect(c.mapped.setup.megatronRelease, c.run.id).toBe(c.run.release?.megatronRelease);
      if (!c.mapped.unexpressed.length) {
        expect(c.projectedStepS, c.run.id).toBeGreaterThan(0);
      }
    }
  }, 120_000);
});
