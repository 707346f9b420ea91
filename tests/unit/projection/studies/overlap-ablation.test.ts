import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { seedsV100 } from '../../../../src/megatron/scenarios.ts';
import type { TrainingSetup } from '../../../../src/megatron/training-setup.ts';
import { defaultKernelOptions } from '../../../../src/projection/layer/kernel-options.ts';
import {
  ablateOverlaps,
  ablationTable,
  type AblationFigures,
  type AblationResult,
} from '../../../../src/projection/studies/overlap-ablation.ts';
import { combinationLabel } from '../../../../src/projection/layer/overlap-flags.ts';

/** Figures of a combination whose only distinguishing numbers are its step and what a shared link added to it. */
const figures = (
  stepMs: number,
  linkSharing: Pick<AblationFigures, 'linkSharing' | 'linkSharingMs'> = { linkSharing: [], linkSharingMs: 0 },
): AblationFigures => ({
  ...linkSharing,
  stepMs,
  exposedByGroup: { tp: 0, cp: 0, pp: 0, dp: 0 },
  exposedMs: 0,
  overlapCostMs: { dp: 0, pp: 0 },
  inFlightBytes: 0,
  peakBytes: 0,
  oom: false,
});

const ok = (r: { result: AblationResult | { ok: false } }): AblationResult => {
  if (!r.result.ok) throw new Error('expected a projected row');
  return r.result;
};

describe('the ablation table (hand-written steps)', () => {
  it('flags a pair slower than its best single, with the interaction step(AB) − step(A) − step(B) + step(∅)', () => {
    // ∅ 100, A 90, B 95, AB 97: AB is worse than A alone; 97 − 90 − 95 + 100 = 12.
    const t = ablationTable(
      ['tpCommOverlap', 'overlapGradReduce'],
      new Map([
        [0, figures(100)],
        [1, figures(90)],
        [2, figures(95)],
        [3, figures(97)],
      ]),
    );
    expect(t.rows.map((r) => combinationLabel(r.flags))).toEqual([
      'none',
      'TP-chunks',
      'grad-reduce',
      'TP-chunks + grad-reduce',
    ]);
    const pair = ok(t.rows[3]!);
    expect(pair.worseThanBestSubset).toBe(true);
    expect(pair.bestSubset).toEqual({ flags: ['tpCommOverlap'], stepMs: 90 });
    expect(pair.interactionMs).toBeCloseTo(12, 12);
    expect(pair.vsBaselineMs).toBeCloseTo(-3, 12);
    expect(ok(t.rows[1]!).worseThanBestSubset).toBe(false);
    expect(t.best).toEqual({ flags: ['tpCommOverlap'], stepMs: 90 });
    expect(t.flagged).toBe(1);
  });

  it('treats steps within 1e-9 of the baseline as ties: no flag, no interaction, the first in mask order stays best', () => {
    // Baseline 100: eps = 1e-7 ms. A 100 − 2e-8 ties the baseline; B 99; AB 99 + 2e-8 ties B.
    const flags = ['tpCommOverlap', 'overlapGradReduce'] as const;
    const t = ablationTable(
      flags,
      new Map([
        [0, figures(100)],
        [1, figures(100 - 2e-8)],
        [2, figures(99)],
        [3, figures(99 + 2e-8)],
      ]),
    );
    const [, a, , ab] = t.rows.map(ok);
    expect(a!.worseThanBestSubset).toBe(false);
    expect(ab!.bestSubset).toEqual({ flags: ['overlapGradReduce'], stepMs: 99 });
    expect(ab!.worseThanBestSubset).toBe(false);
    // 99 + 2e-8 − (100 − 2e-8) − 99 + 100 = 4e-8 < eps: no interaction.
    expect(ab!.interactionMs).toBe(0);
    expect(t.flagged).toBe(0);
    expect(t.best).toEqual({ flags: ['overlapGradReduce'], stepMs: 99 });
    // All within eps of the baseline, AB the lowest by 9e-8: the baseline stays best (no overlap for nothing).
    const flat = ablationTable(
      flags,
      new Map([
        [0, figures(100)],
        [1, figures(100 - 5e-8)],
        [2, figures(100)],
        [3, figures(100 - 9e-8)],
      ]),
    );
    expect(flat.best).toEqual({ flags: [], stepMs: 100 });
    // Past eps it counts: AB 2e-7 over B is worse than B, with that interaction.
    const past = ablationTable(
      flags,
      new Map([
        [0, figures(100)],
        [1, figures(100)],
        [2, figures(99)],
        [3, figures(99 + 2e-7)],
      ]),
    );
    expect(ok(past.rows[3]!).worseThanBestSubset).toBe(true);
    expect(ok(past.rows[3]!).interactionMs).toBeCloseTo(2e-7, 12);
    expect(past.flagged).toBe(1);
  });

  it('compares all-on with every subset, pairs included, and skips combinations that are not launched', () => {
    // Three flags: the best subset of ABC is the pair AC (80), not a single; B alone is not launched.
    const steps: [number, AblationFigures | string][] = [
      [0b000, figures(100)],
      [0b001, figures(90)],
      [0b010, 'not launched'],
      [0b011, figures(88)],
      [0b100, figures(92)],
      [0b101, figures(80)],
      [0b110, figures(91)],
      [0b111, figures(85)],
    ];
    const t = ablationTable(['asyncDgrad', 'overlapGradReduce', 'overlapP2p'], new Map(steps));
    const all = t.rows.at(-1)!;
    expect(all.flags).toEqual(['asyncDgrad', 'overlapGradReduce', 'overlapP2p']);
    expect(ok(all).bestSubset).toEqual({ flags: ['asyncDgrad', 'overlapP2p'], stepMs: 80 });
    expect(ok(all).worseThanBestSubset).toBe(true);
    const single = t.rows.find((r) => combinationLabel(r.flags) === 'grad-reduce')!;
    expect(single.result).toEqual({ ok: false, reason: 'not launched' });
    // A pair whose single is not launched has no interaction term; AC: 80 − 90 − 92 + 100 = −2.
    const ab = ok(t.rows.find((r) => combinationLabel(r.flags) === 'dgrad-AR + grad-reduce')!);
    expect(ab.interactionMs).toBeUndefined();
    expect(ab.worseThanBestSubset).toBe(false);
    expect(ok(t.rows.find((r) => combinationLabel(r.flags) === 'dgrad-AR + p2p')!).interactionMs).toBeCloseTo(-2, 12);
    expect(t.best.stepMs).toBe(80);
  });

  it('says a shared link made a combination worse only when, without it, it would not be', () => {
    // ∅ 100, A 90, B 92, AB 93 of which 4 ms the shared link: 93 − 4 = 89 ≤ 90, so the link is the cause.
    // A second table: AB 95 with 4 ms of sharing: 91 > 90, worse even without the link (no cause named).
    const shared = {
      overlap: 'overlapGradReduce' as const,
      with: 'tp' as const,
      link: 'NVSwitch port',
      sharedMs: 4,
      computeDelayMs: 4,
    };
    const table = (ab: number) =>
      ablationTable(
        ['tpCommOverlap', 'overlapGradReduce'],
        new Map([
          [0, figures(100)],
          [1, figures(90)],
          [2, figures(92)],
          [3, figures(ab, { linkSharing: [shared], linkSharingMs: 4 })],
        ]),
      );
    const byLink = table(93);
    expect(ok(byLink.rows[3]!).worseThanBestSubset).toBe(true);
    expect(ok(byLink.rows[3]!).sharedLinkCause).toEqual([shared]);
    expect(byLink.flaggedForSharedLink).toBe(1);
    const notByLink = table(95);
    expect(ok(notByLink.rows[3]!).worseThanBestSubset).toBe(true);
    expect(ok(notByLink.rows[3]!).sharedLinkCause).toBeUndefined();
    expect(notByLink.flaggedForSharedLink).toBe(0);
  });
});

describe('the overlap ablation of a projected step', () => {
  it("reports the overlaps that cannot apply with Megatron's reason, and projects the rest", async () => {
    const machine = { system: systems[seedsV100.system], dtype: seedsV100.dtype };
    const a = await ablateOverlaps({ ...seedsV100.setup, tp: 2 }, machine);
    const why = Object.fromEntries(a.notApplicable.map((x) => [x.flag, x.reason]));
    expect(Object.keys(why).sort()).toEqual(['overlapP2p', 'overlapParamGather', 'spRegather', 'tpCommOverlap']);
    expect(why.tpCommOverlap).toMatch(/--sequence-parallel/);
    expect(why.overlapParamGather).toMatch(/--use-distributed-optimizer/);
    expect(why.overlapP2p).toMatch(/interleaved/);
    expect(a.applicable).toEqual(['asyncDgrad', 'overlapGradReduce']);
    // none, each single, and the pair, which is also all on (shown once).
    expect(a.rows.map((r) => combinationLabel(r.flags))).toEqual([
      'none',
      'dgrad-AR',
      'grad-reduce',
      'dgrad-AR + grad-reduce',
    ]);
    // The async dgrad all-reduce hides TP communication; overlapping the grad reduce hides DP communication.
    const [none, dgrad, grad] = a.rows.map(ok);
    expect(dgrad!.exposedByGroup.tp).toBeLessThan(none!.exposedByGroup.tp);
    expect(grad!.exposedByGroup.dp).toBeLessThan(none!.exposedByGroup.dp);
    expect(grad!.overlapCostMs.dp).toBeGreaterThan(0);
  });

  it("prices each overlap's memory: the userbuffers and the p2p receives posted ahead", async () => {
    // A small Llama on a DGX H100: t 2 with SP, p 4 × v 2, DP 2 with the distributed optimizer, bf16
    // (p 4: Megatron refuses the interleaved schedule without p2p overlap at p = 2, below).
    const sizes = { s: 1024, b: 1, h: 1024, heads: 16, groups: 16, ffn: 2816, vocab: 32000 };
    const setup: TrainingSetup = {
      sizes,
      tp: 2,
      sp: true,
      layers: 8,
      gpus: 16,
      globalBatch: 16,
      overlap: true,
      pp: 4,
      vpp: 2,
      distributedOptimizer: true,
    };
    const machine = { system: systems['dgx-h100'], dtype: 'bf16' as const, kernels: defaultKernelOptions };
    const a = await ablateOverlaps(setup, machine);
    expect(a.notApplicable).toEqual([]);
    // At p = 2 the p2p overlap cannot be turned off (arguments.py:972-975): listed, kept on in every row.
    const two = await ablateOverlaps({ ...setup, layers: 4, pp: 2, gpus: 8 }, machine);
    expect(two.notApplicable).toEqual([
      {
        flag: 'overlapP2p',
        reason:
          'cannot be turned off at p = 2: Megatron requires it with the interleaved schedule (arguments.py:972-975), so it stays on',
      },
    ]);
    const row = (label: string) => ok(a.rows.find((r) => combinationLabel(r.flags) === label)!);
    const none = row('none');
    // Transformer Engine's initialize_ub: 10 buffers of [s·b, h] in bf16, and 2 more 32 MiB cuBLAS workspaces on Hopper.
    const ub = 10 * 1024 * 1024 * 2 + 2 * 32 * 2 ** 20;
    expect(row('TP-chunks').inFlightBytes).toBe(ub);
    // Resident for the whole step, so the peak rises by exactly that much.
    expect(row('TP-chunks').peakBytes - none.peakBytes).toBeCloseTo(ub, 0);
    // Two [s/t, b, h] bf16 receives posted ahead.
    expect(row('p2p').inFlightBytes).toBe(2 * 512 * 1024 * 2);
    expect(row('p2p').exposedByGroup.pp).toBeLessThan(none.exposedByGroup.pp);
    expect(row('TP-chunks').exposedByGroup.tp).toBeLessThan(none.exposedByGroup.tp);
    const opg = a.rows.find((r) => combinationLabel(r.flags) === 'param-gather')!;
    expect(opg.result).toEqual({
      ok: false,
      reason: '--overlap-param-gather needs --overlap-grad-reduce (Megatron asserts it, arguments.py)',
    });
    expect(row('grad-reduce + param-gather').exposedByGroup.dp).toBeLessThan(row('grad-reduce').exposedByGroup.dp);
  });
});
