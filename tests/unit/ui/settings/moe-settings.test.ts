// The page's MoE settings: the hash, the issues at their controls with the legal values, the presets,
// and the exported command under the ported Megatron start-up checks.
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { megatronLaunch } from '../../../../src/megatron/megatron-args.ts';
import { checkMegatronLaunch, ngcEnvironment } from '../../../../src/megatron/megatron-check.ts';
import { jobArgs } from '../../../../src/megatron/job-bundle.ts';
import { rng } from '../../../../src/reference/random.ts';
import {
  moeExportCaveats,
  moeIssues,
  moePresetNames,
  moeRanks,
  moePresetOf,
  moeRunArgsOf,
  moeSetupOf,
  withMoePreset,
} from '../../../../src/ui/settings/moe-settings.ts';
import { placeIssues } from '../../../../src/ui/settings/field-issues.ts';
import {
  configOf,
  defaultSettings,
  expertsCap,
  hashFromSettings,
  settingsFromHash,
  type Settings,
} from '../../../../src/ui/settings/state.ts';
import { validateConfig } from '../../../../src/parallel/validate.ts';
import { moeFromFlags } from '../../../../src/megatron/moe.ts';

/** Every flag of the pinned release (tests/fixtures/megatron-flags.json). */
const known = new Set(
  (
    JSON.parse(readFileSync(new URL('../../../fixtures/megatron-flags.json', import.meta.url), 'utf8')) as {
      flags: string[];
    }
  ).flags,
);

/** The exported command's failures under the ported checks, on an NGC container of t Hopper GPUs. */
function refused(s: Settings): string[] {
  const launch = megatronLaunch(configOf(s), moeSetupOf(s), moeRanks(s));
  return checkMegatronLaunch(launch.args, ngcEnvironment(moeRanks(s), launch.env)).map(
    (f) => `${f.source}: ${f.message}`,
  );
}

const classroom = withMoePreset(defaultSettings, 'classroom');

describe('MoE presets', () => {
  test.each(moePresetNames)('%s: valid here, a link round-trips it, and its command passes the ported checks', (n) => {
    const s = withMoePreset(defaultSettings, n);
    expect(validateConfig(configOf(s)).errors).toEqual([]);
    expect(moeIssues(s).issues).toEqual([]);
    // The ranks run every preset's block, the DeepSeek shape's shared expert included (session/moe-run.ts).
    expect(moeIssues(s).notes).toEqual([]);
    const back = settingsFromHash(hashFromSettings(s));
    expect(back.messages).toEqual([]);
    expect(back.settings).toEqual(s);
    expect(moePresetOf(s)).toBe(n);
    expect(refused(s)).toEqual([]);
  });

  test('the classroom MoE: 8 experts, top-2, EP 4 over 4 ranks; the DeepSeek shape: k > 2, a shared expert, sigmoid', () => {
    expect([classroom.experts, classroom.topk, classroom.ep, moeRanks(classroom)]).toEqual([8, 2, 4, 4]);
    expect(moeRunArgsOf(classroom)).toMatchObject({ h: 16, tokens: 8, layout: { tp: 1, ep: 4, etp: 1 } });
    const d = withMoePreset(defaultSettings, 'deepseek');
    expect(d.topk).toBeGreaterThan(2);
    expect(d.sharedFfn).toBeGreaterThan(0);
    expect(d.score).toBe('sigmoid');
    expect(d.moeFfn).toBeLessThan(d.ffn);
  });

  test('a changed field leaves no preset matched (the select shows custom)', () => {
    expect(moePresetOf({ ...classroom, topk: 3 })).toBeUndefined();
  });
});

describe('the exported command and job bundle carry the MoE flags', () => {
  test('flags in Megatron spelling, read back as the same setup', () => {
    const s = { ...withMoePreset(defaultSettings, 'deepseek'), capacity: 1.25, tp: 2, sp: true, etp: 1 };
    const args = megatronLaunch(configOf(s), moeSetupOf(s)).args;
    for (const f of args.filter((x) => x.startsWith('--'))) expect(known.has(f), f).toBe(true);
    const value = (f: string): string | undefined => args[args.indexOf(f) + 1];
    expect(value('--num-experts')).toBe('32');
    expect(value('--moe-router-topk')).toBe('4');
    expect(value('--moe-ffn-hidden-size')).toBe('64');
    expect(value('--expert-model-parallel-size')).toBe('4');
    expect(value('--expert-tensor-parallel-size')).toBe('1');
    expect(megatronLaunch(configOf(s), moeSetupOf(s), moeRanks(s)).launcher).toEqual([
      'torchrun',
      '--nproc-per-node',
      '4',
    ]);
    expect(value('--moe-token-dispatcher-type')).toBe('alltoall');
    expect(value('--moe-aux-loss-coeff')).toBe('0.0001');
    expect(value('--moe-expert-capacity-factor')).toBe('1.25');
    expect(value('--moe-shared-expert-intermediate-size')).toBe('64');
    expect(value('--moe-router-score-function')).toBe('sigmoid');
    expect(args).toContain('--moe-grouped-gemm');
    const flags = new Map<string, string | true>();
    args.forEach((x, i) => {
      if (x.startsWith('--')) flags.set(x, args[i + 1]?.startsWith('--') === false ? args[i + 1]! : true);
    });
    expect(moeFromFlags((f) => flags.get(f), s.ffn)).toEqual(moeSetupOf(s));
    expect(refused(s)).toEqual([]);
  });

  test('k = 1 with softmax carries --moe-router-pre-softmax; the dense page carries no MoE flag', () => {
    expect(megatronLaunch(configOf(classroom), moeSetupOf({ ...classroom, topk: 1 })).args).toContain(
      '--moe-router-pre-softmax',
    );
    expect(moeSetupOf(defaultSettings)).toBeUndefined();
    expect(megatronLaunch(configOf(defaultSettings), undefined).args.some((a) => a.includes('moe'))).toBe(false);
  });

  test('the job bundle of the classroom MoE on 8 H100s passes the checks', () => {
    const c = configOf(classroom);
    const { args } = jobArgs({
      name: 'moe',
      setup: {
        sizes: c,
        tp: c.tp,
        sp: c.sp,
        layers: 2,
        gpus: 8,
        globalBatch: 8,
        overlap: true,
        moe: moeSetupOf(classroom)!,
      },
      dtype: 'bf16',
      system: 'dgx-h100',
      gpusPerNode: 8,
      layer: { seed: c.seed, ropeBase: c.ropeBase, eps: c.eps },
    });
    expect(args).toContain('--num-experts');
    expect(checkMegatronLaunch(args, ngcEnvironment(8, { CUDA_DEVICE_MAX_CONNECTIONS: '1' }, 9))).toEqual([]);
  });

  test("caveats: the skew is not Megatron's, and M036 is refused in training", () => {
    const c = moeExportCaveats({ ...classroom, tp: 2, skew: 2, moeNoSp: true });
    expect(c.some((x) => /Router skew 2: .* Megatron has no such flag/.test(x))).toBe(true);
    expect(c.some((x) => /M036 .*moe_layer\.py:629-632/.test(x))).toBe(true);
    expect(moeExportCaveats(defaultSettings)).toEqual([]);
  });
});

describe('bad MoE settings: a message at the control, with the legal values', () => {
  const at = (s: Settings, changed?: keyof Settings) => placeIssues(moeIssues(s).issues, changed);

  test('E not divisible by EP: at EP, naming the EP degrees that split E on these ranks', () => {
    const issues = at({ ...classroom, experts: 6 });
    expect(issues).toEqual([
      {
        field: 'ep',
        message: expect.stringMatching(
          /^Number of experts should be a multiple of expert model parallel_size \(6 experts, EP 4\)\. \(megatron\/training\/arguments\.py:1602-1603\) Legal here: EP 1, 2, 3, 6\.$/,
        ),
      },
    ]);
    // The user changed E: the message sits under E, and names E's legal values.
    const byE = at({ ...classroom, experts: 6 }, 'experts');
    expect(byE[0]!.field).toBe('experts');
  });

  test('k > E: at top-k, naming 1 to E', () => {
    expect(at({ ...classroom, topk: 9 })).toEqual([
      { field: 'topk', message: expect.stringMatching(/--moe-router-topk \(9\) .* Legal here: 1 to 8\.$/) },
    ]);
  });

  test('ETP·EP not fitting the mesh: t and ETP·EP folding onto more ranks than the page runs, at EP, naming what fits', () => {
    const s = { ...classroom, tp: 3, sp: true, s: 9, ep: 8 };
    expect(moeRanks(s)).toBe(24);
    const issues = at(s);
    expect(issues.map((i) => i.field)).toEqual(['ep']);
    expect(issues[0]!.message).toBe(
      't = 3 and ETP·EP = 1·8 fold onto lcm = 24 ranks, more than the 16 the page runs. Legal here: EP 1, 2, 4; ETP none at t = 3.',
    );
  });

  test('the expert FFN not divisible by ETP: at ETP, naming the ETP that split it', () => {
    const s = { ...classroom, ep: 1, etp: 4, moeFfn: 18 };
    expect(at(s).map((i) => i.field)).toEqual(['etp']);
    expect(at(s)[0]!.message).toMatch(/Legal here: ETP 1, 2, 3, 6, 9\.$/);
  });

  test('a capacity factor ≤ 0 or not a number is refused by the hash with what to write', () => {
    for (const v of ['0', '-1', 'NaN', '', 'abc']) {
      const { settings, messages } = settingsFromHash(`#experts=8&capacity=${v}`);
      expect(settings.capacity).toBeNull();
      expect(messages).toEqual([
        {
          key: 'capacity',
          message: expect.stringMatching(
            /^capacity must be off \(dropless\) or a capacity factor > 0 such as 1 or 1\.25, got .* Using capacity=off\.$/,
          ),
        },
      ]);
    }
    expect(settingsFromHash('#experts=8&capacity=1.5').settings.capacity).toBe(1.5);
  });

  test('MoE at t > 1 without SP is refused at SP; with the M036 demonstration it is a note citing Megatron', () => {
    const noSp = { ...classroom, tp: 2, sp: false };
    expect(at(noSp)).toEqual([
      {
        field: 'sp',
        message: expect.stringMatching(
          /without also enabling sequence parallelism .*moe_layer\.py:629-632\) Legal here: turn SP on, or the M036 demonstration/,
        ),
      },
    ]);
    const demo = moeIssues({ ...noSp, moeNoSp: true });
    expect(demo.issues).toEqual([]);
    expect(demo.notes[0]).toEqual({
      field: 'moeNoSp',
      fields: ['moeNoSp'],
      message: expect.stringMatching(
        /^Megatron refuses this in training \(megatron\/core\/transformer\/moe\/moe_layer\.py:629-632\)/,
      ),
    });
    // With SP on for attention, the switch still takes the MoE region off SP: the same note.
    expect(moeIssues({ ...noSp, sp: true, moeNoSp: true }).notes[0]!.field).toBe('moeNoSp');
  });

  test('the M036 switch needs t ≥ 2 and experts', () => {
    expect(at({ ...classroom, tp: 1, moeNoSp: true }).map((i) => i.field)).toEqual(['moeNoSp']);
    expect(at({ ...defaultSettings, moeNoSp: true })).toEqual([
      {
        field: 'moeNoSp',
        message: expect.stringMatching(/^The M036 demonstration routes MoE tokens: give experts ≥ 1/),
      },
    ]);
  });

  test('experts whose weights pass 1 GiB are refused at the expert FFN', () => {
    const s = { ...classroom, experts: 256, ep: 1, moeFfn: 2 ** 20 };
    expect(at(s).map((i) => i.field)).toEqual(['moeFfn']);
  });
});

describe('hostile MoE hashes', () => {
  test.each([
    ['experts=1000000', 'experts', /^experts = 1000000 is more than 256 \(DeepSeek-V3's 256 routed experts/],
    ['experts=-1', 'experts', /^experts must be a whole number ≥ 0, got "-1"/],
    ['topk=0', 'topk', /^topk must be a whole number ≥ 1, got "0"/],
    ['ep=1e3', 'ep', /^ep must be a whole number ≥ 1, got "1e3"/],
    ['etp=65', 'etp', /^etp = 65 is more than 64/],
    ['dispatcher=deepep', 'dispatcher', /^dispatcher must be one of alltoall, allgather, flex, got "deepep"/],
    ['score=__proto__', 'score', /^score must be one of softmax, sigmoid, got "__proto__"/],
    ['aux=Infinity', 'aux', /^aux must be a number from 0 \(no aux loss\) to 1, got "Infinity"/],
    ['skew=NaN', 'skew', /^skew must be a number from 0 \(no skew\) to 20, got "NaN"/],
    ['m036=maybe', 'm036', /^m036 must be on or off/],
    [`moeffn=${'9'.repeat(5000)}`.slice(0, 5007), 'moeffn', /got "9{40}…" \(5000 characters\)/],
  ])('#%$ keeps the default and says what to write', (hash, key, says) => {
    const { settings, messages } = settingsFromHash(`#${hash}`);
    expect(messages).toHaveLength(1);
    expect(messages[0]!.key).toBe(key);
    expect(messages[0]!.message).toMatch(says);
    expect(settings).toEqual(defaultSettings);
  });

  test(`the experts cap is taken (${expertsCap.max}) and one more refused`, () => {
    expect(settingsFromHash(`#experts=${expertsCap.max}`).settings.experts).toBe(expertsCap.max);
    expect(settingsFromHash(`#experts=${expertsCap.max + 1}`).settings.experts).toBe(0);
  });
});

describe('MoE config fuzzing', () => {
  /**
   * Seeded property test over the MoE settings of the hash: every case either has an issue placed at
   * a control, or its exported command passes every ported Megatron check; the page's rules and the
   * ported ones agree. Values mix legal-looking ones and hostile text.
   */
  const next = rng(20261207);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  const texts = {
    experts: ['0', '1', '2', '4', '6', '8', '16', '32', '256', '257', '-1', 'x', '1.5'],
    topk: ['1', '2', '3', '4', '8', '9', '0', 'NaN'],
    moeffn: ['0', '16', '18', '64', '896', '1e9'],
    ep: ['1', '2', '3', '4', '8', '0'],
    etp: ['1', '2', '4', '3'],
    capacity: ['off', '1', '1.25', '0.5', '0', '-2', 'Infinity'],
    dispatcher: ['alltoall', 'allgather', 'flex'],
    shared: ['0', '16', '64', '-1'],
    score: ['softmax', 'sigmoid', 'sqrtsoftplus'],
    aux: ['0', '0.01', '2', '-1'],
    skew: ['0', '1', '5', '21'],
    m036: ['0', '1', 'x'],
    tp: ['1', '2', '4', '8'],
    sp: ['0', '1'],
    preset: ['classroom', 'llama-gqa'],
  } as const;

  test('1000 random hashes: never a throw; an issue at a control, or a command Megatron starts', () => {
    let runs = 0;
    for (let i = 0; i < 1000; i++) {
      const hash =
        '#' +
        Object.entries(texts)
          .filter(() => next() < 0.7)
          .map(([k, vs]) => `${k}=${pick(vs)}`)
          .join('&');
      const { settings: s, messages } = settingsFromHash(hash);
      for (const m of messages) expect(m.message.length, hash).toBeGreaterThan(20);
      const v = validateConfig(configOf(s));
      const { issues, notes } = moeIssues(s);
      for (const i of issues) expect(i.message, hash).toMatch(/Legal here: |M036|weights/);
      if (v.errors.length || issues.length) continue;
      runs++;
      // The M036 demonstration runs what Megatron refuses, and says so in a note; the command keeps the page's SP, so
      // Megatron refuses it by that one rule where SP is off, and by none where it is on.
      expect(
        refused(s).map((r) => r.split(':')[0]),
        hash,
      ).toEqual(
        notes.some((n) => n.field === 'moeNoSp') && !s.sp ? ['megatron/core/transformer/moe/moe_layer.py'] : [],
      );
    }
    expect(runs).toBeGreaterThan(50);
  }, 30_000);
});
