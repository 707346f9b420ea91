import { describe, expect, it } from 'vitest';
import type { ParallelLayout } from '../../../../src/megatron/parallel-layout.ts';
import { applyAdvisorRow, rowOnPage } from '../../../../src/ui/cluster/advisor-apply.ts';
import { defaultSettings, hashFromSettings, settingsFromHash } from '../../../../src/ui/settings/state.ts';

/** A pipelined, interleaved row with every flag the page has no setting for. */
const row: ParallelLayout = {
  tp: 4,
  pp: 2,
  vpp: 2,
  cp: 2,
  microBatch: 4,
  sp: true,
  recompute: 'selective',
  distributedOptimizer: true,
  overlapGradReduce: true,
  overlapParamGather: true,
  tpCommOverlap: true,
};

describe("applying an advisor row to the page's settings", () => {
  it('sets every flag the row names (t, SP, p, v, cp, recompute, distopt, the overlaps, FSDP, tpoverlap)', () => {
    // The classroom layer: s = 8 at t = 4 with SP and tpoverlap off: t = 4 chunks, each rank's shard one chunk.
    // 32 GPUs: DP = 32/(t·p·cp) = 2; G = b·N = 8·32 (gbatch auto) → m = 256/(8·2) = 16, the mesh's d and m.
    const page = { ...defaultSettings, gpus: 32, overlap: false, rmodules: ['mlp' as const] };
    const { settings, notApplied } = applyAdvisorRow(page, row);
    expect(settings).toEqual({
      ...page,
      dp: 2,
      m: 16,
      tp: 4,
      sp: true,
      pp: 2,
      vpp: 2,
      cp: 2,
      recompute: 'selective',
      // The advisor prices selective recompute with Megatron's default module.
      rmodules: ['core_attn'],
      distopt: true,
      ogr: true,
      opg: true,
      fsdp: null,
      overlap: true,
      tpOverlapChunks: 4,
    });
    expect(notApplied).toEqual([
      "--micro-batch-size 4 (the cluster model keeps its own b = 8; the page's b is its own layer's)",
    ]);
    expect(rowOnPage(settings, row)).toBe(true);
    expect(rowOnPage(page, row)).toBe(false);
    // The link carries every applied flag and reads back to the same settings.
    expect(settingsFromHash(hashFromSettings(settings)).settings).toEqual(settings);
  });

  it('sets FSDP from the row and clears it for a DDP row, and sets EP and ETP', () => {
    const zero3 = { ...row, fsdp: { impl: 'megatron', strategy: 'optim_grads_params' } as const };
    const on = applyAdvisorRow(defaultSettings, zero3).settings;
    expect(on.fsdp).toEqual(zero3.fsdp);
    expect(rowOnPage(on, row)).toBe(false);
    expect(applyAdvisorRow(on, row).settings.fsdp).toBeNull();
    const torch = { ...row, fsdp: { impl: 'torch', reshardAfterForward: false } as const };
    expect(hashFromSettings(applyAdvisorRow(defaultSettings, torch).settings)).toContain('fsdp=fsdp2-no-reshard');
    // EP and ETP are the page's ep and etp (the cluster's and the MoE block's): applied, not listed.
    const moe = applyAdvisorRow(defaultSettings, { ...row, ep: 8, etp: 1 });
    expect(moe.notApplied.filter((x) => x.includes('expert'))).toEqual([]);
    expect([moe.settings.ep, moe.settings.etp]).toEqual([8, 1]);
  });

  it("sets the row's --recompute-modules (a MoE model's search tries core_attn with moe_act or moe)", () => {
    for (const recomputeModules of [
      ['core_attn', 'moe'],
      ['core_attn', 'moe_act'],
    ] as const) {
      const moeRow = { ...row, ep: 8, etp: 1, recomputeModules };
      const { settings, notApplied } = applyAdvisorRow(defaultSettings, moeRow);
      expect(settings.rmodules).toEqual(recomputeModules);
      expect(notApplied.filter((x) => x.includes('recompute'))).toEqual([]);
      expect(rowOnPage(settings, moeRow)).toBe(true);
      // The page at Megatron's default module does not run this row; the link carries the list.
      expect(rowOnPage({ ...settings, rmodules: ['core_attn'] }, moeRow)).toBe(false);
      expect(settingsFromHash(hashFromSettings(settings)).settings.rmodules).toEqual(recomputeModules);
    }
  });

  it("sets b when the cluster model is the page's own layer, and turns tpoverlap off for a row without it", () => {
    const page = { ...defaultSettings, cmodel: 'layer' as const, tpOverlapChunks: 2 };
    const plain = { ...row, tpCommOverlap: false, cp: 1, recompute: 'none' as const };
    const { settings, notApplied } = applyAdvisorRow(page, plain);
    expect(settings.b).toBe(4);
    // The seeds' tiny GPT runs b = 8: a row at b = 8 is applied whole.
    expect(applyAdvisorRow(defaultSettings, { ...plain, microBatch: 8 }).notApplied).toEqual([]);
    expect(settings.tpOverlapChunks).toBe(1);
    expect(notApplied.some((f) => f.startsWith('--micro-batch-size'))).toBe(false);
  });

  it("keeps the page's chunk count when it is legal, else takes t, and says so when s does not split into t shards", () => {
    const chunks4 = settingsFromHash('#preset=classroom&s=16&tp=2&sp=1&tpoverlap=chunks:4').settings;
    expect(applyAdvisorRow(chunks4, { ...row, tp: 2 }).settings.tpOverlapChunks).toBe(4);
    // chunks:4 at t = 8 divides t (two shards per chunk): kept. chunks:3 is legal at no t here: t chunks.
    expect(applyAdvisorRow(chunks4, { ...row, tp: 8 }).settings.tpOverlapChunks).toBe(4);
    const chunks3 = settingsFromHash('#preset=classroom&s=12&tp=1&tpoverlap=chunks:3').settings;
    expect(applyAdvisorRow(chunks3, { ...row, tp: 4 }).settings.tpOverlapChunks).toBe(4);
    expect(applyAdvisorRow(defaultSettings, { ...row, tp: 8 }).settings.tpOverlapChunks).toBe(8);
    const { settings, notApplied } = applyAdvisorRow({ ...defaultSettings, s: 12 }, { ...row, tp: 8 });
    expect(settings.tpOverlapChunks).toBe(1);
    expect(notApplied[0]).toMatch(
      /^--tp-comm-overlap \(the page layer's s = 12 tokens do not split into t = 8 shards\)/,
    );
  });
});
