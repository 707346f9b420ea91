import { describe, expect, test } from 'vitest';
import {
  cpCap,
  defaultSettings,
  hashFromSettings,
  hasControl,
  settingsFromHash,
} from '../../../../src/ui/settings/state.ts';
import { clusterFlagsOf, clusterIssues, clusterLaunchOf } from '../../../../src/ui/settings/cluster-flags.ts';
import { offloadLaunchRefusals } from '../../../../src/megatron/activation-offload-launch.ts';
import { fsdpSettingWords, formatFsdpSetting, parseFsdpSetting } from '../../../../src/ui/settings/fsdp-setting.ts';
import { scenarioSizes } from '../../../../src/ui/settings/cluster-model-choice.ts';
import { rng } from '../../../../src/reference/random.ts';
import { defaultSystem, systems } from '../../../../src/hardware/systems.ts';
import { defaultKernelOptions } from '../../../../src/projection/layer/kernel-options.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';
import { kernelOptionsOf } from '../../../../src/ui/settings/kernel-switches.ts';
import { systemOf } from '../../../../src/ui/settings/system-files.ts';
import { optimizerOffloadFractionRefusal } from '../../../../src/projection/step/optimizer-offload.ts';
import { parseProjectArgs } from '../../../../scripts/project/project-args.ts';

describe("the cluster panel's flags in the hash", () => {
  test('every key round-trips, and the default link states none of them', () => {
    const hash = '#cp=2&recompute=selective&rmodules=core_attn,mlp&ogr=1&opg=1&distopt=1&fsdp=optim_grads';
    const { settings, messages } = settingsFromHash(hash);
    expect(messages).toEqual([]);
    expect(settings).toMatchObject({
      cp: 2,
      recompute: 'selective',
      rmodules: ['core_attn', 'mlp'],
      ogr: true,
      opg: true,
      distopt: true,
      fsdp: { impl: 'megatron', strategy: 'optim_grads' },
    });
    expect(settingsFromHash(hashFromSettings(settings)).settings).toEqual(settings);
    for (const key of ['cp', 'recompute', 'rmodules', 'ogr', 'opg', 'fsdp']) {
      expect(hashFromSettings(defaultSettings)).not.toMatch(new RegExp(`[#&]${key}=`));
      expect(hasControl(key)).toBe(true);
    }
  });

  test('every FSDP word parses and formats back to itself, and a wrong word names them all', () => {
    for (const w of fsdpSettingWords) expect(formatFsdpSetting(parseFsdpSetting(w))).toBe(w);
    expect(parseFsdpSetting('fsdp2')).toEqual({ impl: 'torch', reshardAfterForward: true });
    expect(() => parseFsdpSetting('zero3')).toThrow(
      'fsdp must be one of off, no_shard, optim, optim_grads, optim_grads_params, fsdp2, fsdp2-no-reshard, got "zero3".',
    );
  });

  test('hostile values: each refused with what to write, keeping the default', () => {
    const hash =
      '#cp=0&recompute=__proto__&rmodules=core_attn,rm -rf&ogr=maybe&opg=2&fsdp=constructor&' +
      `x=1&cp=${'9'.repeat(400)}`;
    const { settings, messages } = settingsFromHash(hash);
    for (const k of ['cp', 'recompute', 'rmodules', 'ogr', 'opg', 'fsdp'] as const)
      expect(settings[k]).toEqual(defaultSettings[k]);
    expect(messages.map((m) => m.key)).toEqual(['x', 'cp', 'recompute', 'rmodules', 'ogr', 'opg', 'fsdp']);
    expect(messages[1]!.message).toBe('cp must be a whole number ≥ 1, got "0". Using cp=1.');
    expect(messages[2]!.message).toBe(
      'recompute must be one of none, selective, full, got "__proto__". Using recompute=none.',
    );
    expect(messages[3]!.message).toMatch(/^--recompute-modules "rm": Megatron asserts the choices .*core_attn, mlp/);
    expect(messages[6]!.message).toMatch(/^fsdp must be one of off, .* got "constructor"\. Using fsdp=off\.$/);
    expect(settingsFromHash(`#cp=${cpCap.max + 1}`).messages[0]!.message).toMatch(
      /^cp = 8193 is more than 8192 \(t × p × cp × DP = N/,
    );
  });
});

describe("Megatron's rules on the cluster flags, at their controls", () => {
  test('--overlap-param-gather without the distributed optimizer or --overlap-grad-reduce', () => {
    const s = { ...defaultSettings, opg: true };
    expect(clusterIssues(s)).toEqual([
      { field: 'opg', message: expect.stringMatching(/^--overlap-param-gather needs --use-distributed-optimizer/) },
    ]);
    expect(clusterIssues(s, 'distopt')[0]!.field).toBe('distopt');
    expect(clusterIssues({ ...s, distopt: true })[0]!.message).toMatch(/needs --overlap-grad-reduce/);
    expect(clusterIssues({ ...s, distopt: true, ogr: true })).toEqual([]);
    // Megatron-FSDP stands in for the distributed optimizer's parameter gather.
    expect(clusterIssues({ ...s, ogr: true, fsdp: { impl: 'megatron', strategy: 'optim_grads_params' } })).toEqual([]);
  });

  test('FSDP2 with fp16, p > 1 or the distributed optimizer is refused at fsdp with its source line', () => {
    const fsdp2 = {
      ...defaultSettings,
      dtype: 'bf16' as const,
      fsdp: { impl: 'torch', reshardAfterForward: true } as const,
    };
    expect(clusterIssues(fsdp2)).toEqual([]);
    expect(clusterIssues({ ...fsdp2, dtype: 'fp16' }, 'dtype')).toEqual([
      {
        field: 'dtype',
        message: expect.stringMatching(/^--use-torch-fsdp2 not supported with fp16 yet: train in bf16\./),
      },
    ]);
    expect(clusterIssues({ ...fsdp2, pp: 2 })).toEqual([
      { field: 'fsdp', message: expect.stringMatching(/arguments\.py/) },
    ]);
    expect(clusterIssues({ ...fsdp2, distopt: true }, 'distopt')[0]!.field).toBe('distopt');
  });

  test('the flags as the projection takes them: selective recomputes rmodules, full is uniform one layer per checkpoint', () => {
    expect(clusterFlagsOf(defaultSettings)).toEqual({
      cp: 1,
      distributedOptimizer: false,
      overlapGradReduce: false,
      overlapParamGather: false,
    });
    const sel = clusterFlagsOf({ ...defaultSettings, recompute: 'selective', rmodules: ['mlp'] });
    expect(sel.recomputation).toEqual({ granularity: 'selective', modules: ['mlp'] });
    const full = clusterFlagsOf({ ...defaultSettings, recompute: 'full' });
    expect(full.recomputation).toEqual({ granularity: 'full', method: 'uniform', layers: 1 });
  });
});

describe('cluster flag fuzzing', () => {
  /**
   * Seeded property test: the page's rules (clusterIssues) and the projection agree. A hash the page
   * finds nothing wrong with projects at t = 1 or fails on a rule that is not a data-parallel flag's;
   * one it refuses fails in the projection, with the same message unless a layer rule comes first. Values mix legal ones and hostile text.
   */
  const next = rng(20261208);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  const texts = {
    cp: ['1', '2', '4', '3', '0', 'x'],
    recompute: ['none', 'selective', 'full', 'block'],
    rmodules: ['core_attn', 'mlp', 'core_attn,layernorm', 'moe_act', 'nope'],
    ogr: ['0', '1'],
    opg: ['0', '1'],
    distopt: ['0', '1'],
    fsdp: [...fsdpSettingWords, 'zero3'],
    pp: ['1', '2', '4'],
    vpp: ['1', '2'],
    p2pov: ['0', '1'],
    bucket: ['default', '1000', '40000000', '0', '1.5'],
    cpuoffload: ['off', '1', '0.5', '0', '1.5', 'x'],
    offload: ['off', 'core_attn', 'core_attn,attn_proj', 'attn_proj', 'qkv_linear'],
    offloadfrac: ['default', '0', '0.5', '1', '1.5', 'x'],
    offloadmin: ['default', '0', '1048576', '-1', '1.5'],
    offloaddelta: ['default', '0', '1073741824', '-8'],
    cpuov: ['0', '1'],
    ce: ['plan', 'megatron', 'megatron-fused', 'te-fused', 'fused'],
    graphs: ['none', 'local', 'transformer_engine', 'full_iteration'],
    gscope: ['full', 'attn', 'mlp', 'attn,mlp', 'moe_router', 'nope'],
    // The seeds' box has no host figures (cpuoffload is refused there); the H100 node prices it.
    system: [defaultSystem, 'dgx-h100'],
  } as const;
  const sizes = scenarioSizes('seeds-v100');
  /**
   * The flags' rules, as their messages start: the data-parallel flags, the p2p overlap, the CUDA graphs
   * with recomputation, the capture scope, the activation offload's modules.
   */
  const flagRules = [
    /overlap-param-gather|fsdp|FSDP/,
    /--no-overlap-p2p-communication/,
    /^full recompute is only supported/,
    /cuda_graph_modules|--cuda-graph-modules/,
    /^attn_proj cannot be set to offload_modules alone|^fine-grained activation offloading with CUDA graphs/,
  ];

  test('200 random hashes: never a throw from the hash; the page refuses exactly what the projection refuses for the flags', async () => {
    let projected = 0;
    let agreements = 0;
    const agreed = new Set<RegExp>();
    for (let i = 0; i < 200; i++) {
      const hash =
        '#' +
        Object.entries(texts)
          .filter(() => next() < 0.7)
          .map(([k, vs]) => `${k}=${pick(vs)}`)
          .join('&');
      const { settings: s, messages } = settingsFromHash(hash);
      for (const m of messages) expect(hasControl(m.key), hash).toBe(true);
      const issues = clusterIssues(s);
      for (const x of issues) expect(hasControl(x.field), hash).toBe(true);
      const setup = {
        sizes,
        tp: 1,
        sp: false,
        // 8 layers: p·v ≤ 8 stages of whole layers.
        layers: 8,
        gpus: 8,
        globalBatch: 8 * sizes.b,
        overlap: true,
        pp: s.pp,
        vpp: s.vpp,
        ...clusterFlagsOf(s),
      };
      const machine = { system: systemOf(s.system), dtype: 'fp16' as const, kernels: kernelOptionsOf(s) };
      const error = await projectStep(setup, machine).then(
        () => '',
        (e: unknown) => (e instanceof Error ? e.message : String(e)),
      );
      // The projection checks the layer (s against 2·cp, the recompute modules) before the flags.
      const rule = flagRules.find((r) => r.test(error));
      if (issues.length) {
        expect(error, hash).not.toBe('');
        if (rule) {
          expect(error, hash).toBe(issues[0]!.message);
          agreed.add(rule);
          agreements++;
        }
      } else if (error) expect(error, hash).not.toMatch(rule ?? /^$/);
      else projected++;
    }
    expect(projected).toBeGreaterThan(20);
    expect(agreements).toBeGreaterThan(10);
    // Each kind of rule was met and placed as the projection throws it.
    expect([...agreed]).toEqual(expect.arrayContaining(flagRules));
  }, 60_000);
});

describe('the memory levers on the page: --fp8-param-gather and --offload-modules', () => {
  const h100 = { system: systems['dgx-h100'], dtype: 'bf16' as const };
  const llama = { s: 2048, b: 1, h: 2048, heads: 16, groups: 4, ffn: 5632, vocab: 32000 };
  // t 2 SP, 4 layers on one H100 node (DP 4).
  const job = { sizes: llama, tp: 2, sp: true, layers: 4, gpus: 8, globalBatch: 8, overlap: true } as const;
  const setup = (s: typeof defaultSettings) => ({ ...job, ...clusterFlagsOf(s) });

  test('round-trip through the hash and reach the projection as its flags', () => {
    const { settings, messages } = settingsFromHash('#fp8pg=1&offload=core_attn,attn_proj&distopt=1');
    expect(messages).toEqual([]);
    expect(clusterFlagsOf(settings)).toMatchObject({
      fp8ParamGather: true,
      activationOffload: { modules: ['core_attn', 'attn_proj'], fraction: 1, minTensorElements: 1 << 20 },
    });
    expect(hashFromSettings(settings)).toContain('offload=core_attn%2Cattn_proj');
    expect(clusterFlagsOf(defaultSettings).activationOffload).toBeUndefined();
    expect(settingsFromHash('#offload=mlp').messages[0]!.message).toMatch(/"mlp".*1863-1867/);
  });

  test('fp8pg is --fp4-param-gather under fp4, refused at fp8pg without the distributed optimizer as the projection refuses it', async () => {
    const fp4 = { ...defaultSettings, system: 'dgx-b200', fp4: 'e2m1' as const, fp8pg: true, distopt: true };
    expect(clusterFlagsOf(fp4)).toMatchObject({ fp4ParamGather: true });
    expect(clusterFlagsOf(fp4).fp8ParamGather).toBeUndefined();
    expect(clusterIssues(fp4)).toEqual([]);
    const noDistOpt = { ...fp4, distopt: false };
    const [issue] = clusterIssues(noDistOpt);
    expect(issue).toMatchObject({ field: 'fp8pg' });
    const b200 = {
      system: systems['dgx-b200'],
      dtype: 'bf16' as const,
      kernels: { ...defaultKernelOptions, fp4: 'e2m1' as const },
    };
    await expect(projectStep(setup(noDistOpt), b200)).rejects.toThrow(issue!.message);
  });

  test("fp8pg moves the cluster panel's step: its parameter all-gather at 1 byte per layer parameter", async () => {
    const fp8 = { ...defaultSettings, system: 'dgx-h100', fp8: 'hybrid' as const, distopt: true };
    const kernels = { ...defaultKernelOptions, fp8: 'hybrid' as const };
    const off = await projectStep(setup(fp8), { ...h100, kernels });
    const on = await projectStep(setup({ ...fp8, fp8pg: true }), { ...h100, kernels });
    expect(off.dpCommMs.paramGatherBytesPerParam).toBe(2);
    expect(on.dpCommMs.paramGatherBytesPerParam).toBeLessThan(1.5);
    expect(on.stepMs).not.toBe(off.stepMs);
  });

  test("Megatron's rules show at their control with the message the projection throws", async () => {
    const noFp8 = { ...defaultSettings, fp8pg: true, distopt: true };
    const [issue] = clusterIssues(noFp8);
    expect(issue).toMatchObject({ field: 'fp8pg' });
    await expect(projectStep(setup(noFp8), h100)).rejects.toThrow(issue!.message);
    const alone = { ...defaultSettings, offload: ['attn_proj'] as const };
    const [off] = clusterIssues(alone);
    expect(off).toMatchObject({ field: 'offload' });
    expect(off!.message).toMatch(/1868-1873/);
    await expect(projectStep(setup(alone), h100)).rejects.toThrow(off!.message);
    const fine = {
      ...defaultSettings,
      system: 'dgx-h100',
      fp8: 'hybrid' as const,
      fp8pg: true,
      distopt: true,
      offload: ['core_attn'] as const,
    };
    expect(clusterIssues(fine)).toEqual([]);
    await expect(
      projectStep(setup(fine), { ...h100, kernels: { ...defaultKernelOptions, fp8: 'hybrid' } }),
    ).resolves.toBeDefined();
  });
});

describe('--cross-entropy on the page (ce)', () => {
  test('each pricing round-trips through the hash at its control; the default link leaves it out', () => {
    for (const ce of ['megatron', 'megatron-fused', 'te-fused'] as const) {
      const { settings, messages } = settingsFromHash(`#ce=${ce}`);
      expect(messages).toEqual([]);
      expect(settings.ce).toBe(ce);
      expect(hashFromSettings(settings)).toContain(`ce=${ce}`);
    }
    expect(defaultSettings.ce).toBe('plan');
    expect(hashFromSettings(defaultSettings)).not.toMatch(/[#&]ce=/);
    expect(hasControl('ce')).toBe(true);
    expect(settingsFromHash('#ce=fused').messages[0]!.message).toMatch(/megatron-fused/);
  });
});

describe('--optimizer-cpu-offload on the page (cpuoffload)', () => {
  const h100 = { system: systems['dgx-h100'], dtype: 'bf16' as const };
  const llama = { s: 2048, b: 1, h: 2048, heads: 16, groups: 4, ffn: 5632, vocab: 32000 };
  const job = { sizes: llama, tp: 2, sp: true, layers: 4, gpus: 8, globalBatch: 8, overlap: true } as const;
  const setup = (s: typeof defaultSettings) => ({ ...job, ...clusterFlagsOf(s) });

  test('round-trips through the hash as the offloaded share and reaches the projection as its flags', () => {
    const { settings, messages } = settingsFromHash('#cpuoffload=0.5&distopt=1');
    expect(messages).toEqual([]);
    expect(clusterFlagsOf(settings).optimizerCpuOffload).toEqual({ fraction: 0.5, overlapD2hH2d: false });
    expect(clusterLaunchOf(clusterFlagsOf(settings)).flags).toContain(
      '--optimizer-cpu-offload --use-precision-aware-optimizer --optimizer-offload-fraction 0.5',
    );
    expect(settingsFromHash(hashFromSettings(settings)).settings.cpuoffload).toBe(0.5);
    expect(clusterFlagsOf(defaultSettings).optimizerCpuOffload).toBeUndefined();
    expect(hashFromSettings(defaultSettings)).not.toContain('cpuoffload');
    expect(hasControl('cpuoffload')).toBe(true);
    expect(settingsFromHash('#cpuoffload=half').messages[0]!.message).toMatch(
      /^--optimizer-offload-fraction "half": write the share .* Using cpuoffload=off\.$/,
    );
  });

  test('f = 0 is taken, as Megatron and the projection take it; a share outside [0, 1] is refused by the rule the CLI and projection use', async () => {
    // HybridDeviceOptimizer at f = 0 moves no parameter to the host (hybrid_optimizer.py:258, :273).
    const { settings, messages } = settingsFromHash('#cpuoffload=0&distopt=1');
    expect(messages).toEqual([]);
    expect(settings.cpuoffload).toBe(0);
    const page = { ...defaultSettings, distopt: true };
    const none = await projectStep(setup({ ...page, cpuoffload: 0 }), h100);
    const base = await projectStep(setup(page), h100);
    expect(none.memory.optimizerBytes).toBe(base.memory.optimizerBytes);
    expect(none.optimizerMs).toBeCloseTo(base.optimizerMs, 9);
    for (const bad of ['1.5', '-0.5']) {
      const [m] = settingsFromHash(`#cpuoffload=${bad}`).messages;
      const why = optimizerOffloadFractionRefusal(Number(bad))!;
      expect(m!.message).toBe(`${why} Using cpuoffload=off.`);
      expect(() =>
        parseProjectArgs([
          '--optimizer-cpu-offload',
          '--use-precision-aware-optimizer',
          `--optimizer-offload-fraction=${bad}`,
        ]),
      ).toThrow(why);
      await expect(projectStep(setup({ ...page, cpuoffload: Number(bad) }), h100)).rejects.toThrow(why);
    }
  });

  test("moves the cluster panel's step: half the optimizer state off the GPU, the host's copies and Adam added", async () => {
    const page = { ...defaultSettings, distopt: true };
    const base = await projectStep(setup(page), h100);
    const off = await projectStep(setup({ ...page, cpuoffload: 0.5 }), h100);
    expect(off.memory.optimizerBytes).toBeLessThan(base.memory.optimizerBytes);
    expect(off.optimizerMs).toBeGreaterThan(base.optimizerMs / 2);
    expect(off.stepMs).not.toBe(base.stepMs);
  });

  test("Megatron's rule with --fp8-param-gather (the offload only under delayed scaling) shows at the control just changed", async () => {
    const fp8 = { ...defaultSettings, system: 'dgx-h100', fp8: 'hybrid' as const, distopt: true, fp8pg: true };
    const tensorwise = { ...fp8, fp8recipe: 'tensorwise' as const };
    expect(clusterIssues({ ...tensorwise, cpuoffload: null })).toEqual([]);
    const [issue] = clusterIssues({ ...tensorwise, cpuoffload: 1 }, 'cpuoffload');
    expect(issue).toMatchObject({ field: 'cpuoffload' });
    expect(issue!.message).toMatch(/arguments\.py:1808-1810/);
    expect(clusterIssues({ ...fp8, cpuoffload: 1 })).toEqual([]);
    const kernels = { ...defaultKernelOptions, fp8: 'hybrid' as const, fp8Recipe: 'tensorwise' as const };
    await expect(projectStep(setup({ ...tensorwise, cpuoffload: 1 }), { ...h100, kernels })).rejects.toThrow(
      /1808-1810/,
    );
  });
});

describe('--overlap-cpu-optimizer-d2h-h2d, --no-overlap-p2p-communication and --ddp-bucket-size on the page', () => {
  const h100 = { system: systems['dgx-h100'], dtype: 'bf16' as const };
  const llama = { s: 2048, b: 1, h: 2048, heads: 16, groups: 4, ffn: 5632, vocab: 32000 };
  const job = { sizes: llama, tp: 2, sp: true, layers: 8, gpus: 8, globalBatch: 8, overlap: true } as const;
  const setup = (s: typeof defaultSettings) => ({ ...job, pp: s.pp, vpp: s.vpp, ...clusterFlagsOf(s) });

  test('round-trip through the hash, reach the projection as its flags and the command text as Megatron spells them', () => {
    const { settings, messages } = settingsFromHash('#cpuoffload=0.5&cpuov=1&p2pov=0&bucket=1000000&distopt=1');
    expect(messages).toEqual([]);
    expect(settings).toMatchObject({ cpuoffload: 0.5, cpuov: true, p2pov: false, bucket: 1_000_000 });
    expect(settingsFromHash(hashFromSettings(settings)).settings).toEqual(settings);
    const f = clusterFlagsOf(settings);
    expect(f).toMatchObject({
      optimizerCpuOffload: { fraction: 0.5, overlapD2hH2d: true },
      overlapP2pComm: false,
      bucketSize: 1_000_000,
    });
    expect(clusterLaunchOf(f).flags).toEqual(
      expect.arrayContaining([
        '--overlap-cpu-optimizer-d2h-h2d',
        '--no-overlap-p2p-communication',
        '--ddp-bucket-size 1000000',
      ]),
    );
    // Megatron's defaults (copies in sequence, p2p overlap with v > 1, the resolved bucket) write nothing.
    for (const key of ['cpuov', 'p2pov', 'bucket']) {
      expect(hashFromSettings(defaultSettings)).not.toMatch(new RegExp(`[#&]${key}=`));
      expect(hasControl(key)).toBe(true);
    }
    expect(clusterFlagsOf(defaultSettings)).not.toHaveProperty('overlapP2pComm');
    expect(clusterFlagsOf(defaultSettings)).not.toHaveProperty('bucketSize');
    // The overlap switch belongs to the offload: alone it sets nothing.
    expect(clusterFlagsOf({ ...defaultSettings, cpuov: true })).not.toHaveProperty('optimizerCpuOffload');
    expect(settingsFromHash('#bucket=').settings.bucket).toBeNull();
  });

  test('hostile values: each refused with what to write, keeping the default', () => {
    for (const bad of ['0', '1.5', 'x', '-3', '9'.repeat(400)])
      expect(settingsFromHash(`#bucket=${bad}`).messages[0]!.message).toMatch(
        /^bucket must be the parameters per gradient bucket \(--ddp-bucket-size\), a whole number ≥ 1 .* Using bucket=default\.$/,
      );
    const { settings, messages } = settingsFromHash('#p2pov=maybe&cpuov=2');
    expect(settings).toMatchObject({ p2pov: true, cpuov: false });
    expect(messages.map((m) => m.key)).toEqual(['cpuov', 'p2pov']);
    expect(messages[1]!.message).toMatch(/^p2pov .* Using p2pov=1\.$/);
  });

  test("each moves the cluster panel's step as its pricing says", async () => {
    // The offloaded optimizer's D2H, CPU Adam and H2D: their max with the overlap, their sum without (optimizer-offload.ts).
    const off = { ...defaultSettings, system: 'dgx-h100', distopt: true, cpuoffload: 1 };
    const serial = await projectStep(setup(off), h100);
    const overlapped = await projectStep(setup({ ...off, cpuov: true }), h100);
    expect(overlapped.optimizerMs).toBeLessThan(serial.optimizerMs);
    // A smaller bucket: more buckets of the DP gradient sync under --overlap-grad-reduce (DP 4 at p = 1).
    const ogr = { ...defaultSettings, ogr: true };
    const one = await projectStep(setup(ogr), h100);
    const many = await projectStep(setup({ ...ogr, bucket: 1_000_000 }), h100);
    expect(many.dpBuckets).toBeGreaterThan(one.dpBuckets);
    // Interleaved at p = 4: the p2p sends block without the overlap, so the step grows.
    const inter = { ...defaultSettings, pp: 4, vpp: 2 };
    const on = await projectStep(setup(inter), h100);
    const blocking = await projectStep(setup({ ...inter, p2pov: false }), h100);
    expect(blocking.stepMs).toBeGreaterThan(on.stepMs);
  });

  test('--no-overlap-p2p-communication with v > 1 at p = 2 is refused at p2pov with the message the projection throws', async () => {
    const s = { ...defaultSettings, pp: 2, vpp: 2, p2pov: false };
    const [issue] = clusterIssues(s);
    expect(issue).toMatchObject({ field: 'p2pov' });
    expect(issue!.message).toMatch(/arguments\.py:972-975/);
    expect(clusterIssues(s, 'vpp')[0]!.field).toBe('vpp');
    await expect(projectStep(setup(s), h100)).rejects.toThrow(issue!.message);
    // At p = 4, or at v = 1 (where Megatron turns the overlap off itself), nothing to refuse.
    expect(clusterIssues({ ...s, pp: 4 })).toEqual([]);
    expect(clusterIssues({ ...s, vpp: 1 })).toEqual([]);
  });
});

describe("the fine-grained offload's tuning flags on the page (offloadfrac, offloadmin, offloaddelta)", () => {
  const h100 = { system: systems['dgx-h100'], dtype: 'bf16' as const };
  const llama = { s: 2048, b: 1, h: 2048, heads: 16, groups: 4, ffn: 5632, vocab: 32000 };
  const job = { sizes: llama, tp: 2, sp: true, layers: 8, gpus: 8, globalBatch: 8, overlap: true } as const;
  const setup = (s: typeof defaultSettings) => ({ ...job, pp: s.pp, ...clusterFlagsOf(s) });

  test('round-trip through the hash, reach the projection and the command text as Megatron spells them; empty is the default', () => {
    const { settings, messages } = settingsFromHash(
      '#offload=core_attn&offloadfrac=0.5&offloadmin=0&offloaddelta=1073741824',
    );
    expect(messages).toEqual([]);
    expect(settings).toMatchObject({ offloadfrac: 0.5, offloadmin: 0, offloaddelta: 1 << 30 });
    expect(settingsFromHash(hashFromSettings(settings)).settings).toEqual(settings);
    const f = clusterFlagsOf(settings);
    expect(f.activationOffload).toEqual({
      modules: ['core_attn'],
      fraction: 0.5,
      minTensorElements: 0,
      deltaBytesPerPpRank: 1 << 30,
    });
    expect(clusterLaunchOf(f).flags).toEqual(
      expect.arrayContaining([
        '--activation-offload-fraction 0.5',
        '--min-offloaded-tensor-size 0',
        '--delta-offload-bytes-across-pp-ranks 1073741824',
      ]),
    );
    // Megatron's defaults write nothing, in the hash or the flags; without offload the numbers set nothing.
    for (const key of ['offloadfrac', 'offloadmin', 'offloaddelta']) {
      expect(hashFromSettings(defaultSettings)).not.toMatch(new RegExp(`[#&]${key}=`));
      expect(hasControl(key)).toBe(true);
      expect(settingsFromHash(`#${key}=`).settings[key as 'offloadfrac']).toBeNull();
    }
    const plain = clusterLaunchOf(clusterFlagsOf({ ...settings, offloadfrac: 1, offloadmin: null, offloaddelta: 0 }));
    expect(plain.flags.join(' ')).not.toMatch(/--activation-offload-fraction|--min-offloaded|--delta-offload/);
    expect(clusterFlagsOf({ ...defaultSettings, offloadfrac: 0.5 })).not.toHaveProperty('activationOffload');
  });

  test('a value Megatron asserts against is refused with the message the CLI gives (one parser, parseOffloadTuning)', () => {
    // flag=value: argparse's (and node's parseArgs') spelling of a value that starts with a dash.
    const cli = (flag: string, v: string) => () =>
      parseProjectArgs(['--fine-grained-activation-offloading', '--offload-modules', 'core_attn', `${flag}=${v}`]);
    const cases = [
      ['offloadfrac', '--activation-offload-fraction', '1.5', /transformer_config\.py:1888-1890/],
      ['offloadmin', '--min-offloaded-tensor-size', '-1', /transformer_config\.py:1885-1887/],
      ['offloaddelta', '--delta-offload-bytes-across-pp-ranks', '-8', /transformer_config\.py:1891-1893/],
      ['offloadmin', '--min-offloaded-tensor-size', '1.5', /reads an int/],
      ['offloadfrac', '--activation-offload-fraction', 'half', /reads a float/],
    ] as const;
    for (const [key, flag, v, line] of cases) {
      const { settings, messages } = settingsFromHash(`#offload=core_attn&${key}=${v}`);
      expect(settings[key]).toBeNull();
      const message = messages[0]!.message.replace(/ Using \w+=default\.$/, '');
      expect(message).toMatch(line);
      expect(message.startsWith(flag)).toBe(true);
      expect(cli(flag, v)).toThrow(message);
    }
  });

  test('the fraction moves the projection: half the groups offloaded keep more on the GPU than all of them', async () => {
    const all = { ...defaultSettings, offload: ['core_attn'] as const };
    const whole = await projectStep(setup(all), h100);
    const half = await projectStep(setup({ ...all, offloadfrac: 0.5 }), h100);
    expect(half.memory.totalBytes).toBeGreaterThan(whole.memory.totalBytes);
  });
});

describe("CUDA graphs with recomputation: Megatron's asserts at the graphs control", () => {
  const h100 = { system: systems['dgx-h100'], dtype: 'bf16' as const };
  const llama = { s: 2048, b: 1, h: 2048, heads: 16, groups: 4, ffn: 5632, vocab: 32000 };
  const job = { sizes: llama, tp: 2, sp: true, layers: 4, gpus: 8, globalBatch: 8, overlap: true } as const;
  const setup = (s: typeof defaultSettings) => ({ ...job, ...clusterFlagsOf(s) });
  const machine = (s: typeof defaultSettings) => ({
    ...h100,
    kernels: { ...defaultKernelOptions, cudaGraphImpl: s.graphs, layerArch: s.layerArch },
  });

  test('full recomputation under local graphs is refused at graphs, as the projection refuses it; full_iteration passes', async () => {
    const full = { ...defaultSettings, graphs: 'local' as const, recompute: 'full' as const };
    const [issue] = clusterIssues(full);
    expect(issue).toMatchObject({ field: 'graphs' });
    expect(issue!.message).toMatch(/2522-2525/);
    await expect(projectStep(setup(full), machine(full))).rejects.toThrow(issue!.message);
    const whole = { ...full, graphs: 'full_iteration' as const };
    expect(clusterIssues(whole)).toEqual([]);
    await expect(projectStep(setup(whole), machine(whole))).resolves.toBeDefined();
  });

  test('GPT (dropout 0.1) with selective core_attn recomputation inside the graph is refused; the Llama layer passes', async () => {
    const gpt = {
      ...defaultSettings,
      graphs: 'transformer_engine' as const,
      recompute: 'selective' as const,
      rmodules: ['core_attn'] as const,
      layerArch: 'gpt' as const,
    };
    const [issue] = clusterIssues(gpt);
    expect(issue!.message).toMatch(/attention dropout.*2545-2552/);
    await expect(projectStep(setup(gpt), machine(gpt))).rejects.toThrow(issue!.message);
    expect(clusterIssues({ ...gpt, layerArch: 'llama' })).toEqual([]);
  });
});

describe('the fp8 recipe and NVFP4 on the page', () => {
  test('round-trip through the hash; a GPU that lacks the format is refused at its control in the projection’s words', async () => {
    const { settings, messages } = settingsFromHash('#system=dgx-h100&fp8=e4m3&fp8recipe=mxfp8');
    expect(messages).toEqual([]);
    const [issue] = clusterIssues(settings);
    expect(issue).toMatchObject({ field: 'fp8recipe' });
    expect(issue!.message).toMatch(/MXFP8.*H100/);
    const machine = {
      system: systems['dgx-h100'],
      dtype: 'bf16' as const,
      kernels: { ...defaultKernelOptions, fp8: 'e4m3' as const, fp8Recipe: 'mxfp8' as const },
    };
    const sizes = { s: 1024, b: 1, h: 1024, heads: 8, groups: 8, ffn: 2816, vocab: 32000 };
    await expect(
      projectStep({ sizes, tp: 1, sp: false, layers: 2, gpus: 8, globalBatch: 8, overlap: true }, machine),
    ).rejects.toThrow(issue!.message);
    const fp4 = settingsFromHash('#system=dgx-h100&fp4=e2m1').settings;
    expect(clusterIssues(fp4)[0]).toMatchObject({ field: 'fp4' });
    expect(clusterIssues(settingsFromHash('#system=dgx-b200&fp4=e2m1').settings)).toEqual([]);
  });
});

describe("the cluster panel's launch text", () => {
  test('offloading comes with the NVTE_CPU_OFFLOAD_V1=1 its launch check needs (arguments.py:1857-1859)', () => {
    const { settings } = settingsFromHash('#offload=core_attn,attn_proj&distopt=1');
    const { env, flags } = clusterLaunchOf(clusterFlagsOf(settings));
    // The flags as argparse reads them: each flag with the words after it.
    const words = flags.flatMap((f) => f.split(' '));
    const after = (name: string): string[] | undefined => {
      const i = words.indexOf(name);
      if (i < 0) return undefined;
      const j = words.findIndex((w, k) => k > i && w.startsWith('--'));
      return words.slice(i + 1, j < 0 ? undefined : j);
    };
    const launch = {
      flag: (name: string) => {
        const v = after(name);
        return v === undefined ? undefined : v.length ? v.join(' ') : (true as const);
      },
      list: after,
      env,
    };
    expect(after('--offload-modules')).toEqual(['core_attn', 'attn_proj']);
    expect(offloadLaunchRefusals(launch)).toEqual([]);
    expect(offloadLaunchRefusals({ ...launch, env: {} }).map((f) => f.source)).toEqual([
      'megatron/training/arguments.py:1857-1859',
    ]);
    expect(clusterLaunchOf(clusterFlagsOf(defaultSettings)).env).toEqual({});
  });
});
