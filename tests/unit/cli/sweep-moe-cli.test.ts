// `npm run sweep -- --experts …`: the MoE flags' parser, and the CLI refusing bad input as a user runs it.
import { describe, expect, it } from 'vitest';
import { parseMoeSweep } from '../../../scripts/bench/sweep-moe-args.ts';
import { moeGrid, moeGridArgs, type MoeGridPoint } from '../../../src/parallel/moe-grid.ts';
import { moeLayoutErrors, moeWorld } from '../../../src/parallel/moe-layout.ts';
import { moeConfigErrors } from '../../../src/reference/moe/config.ts';
import { runCli } from './run-cli.ts';

const refusal = (argv: string[]): string => {
  const p = parseMoeSweep(argv);
  if (!('errors' in p)) throw new Error(`accepted: ${argv.join(' ')}`);
  return p.errors.join('\n');
};

describe('the MoE sweep flags', () => {
  it("build the run: Megatron's defaults for etp (= tp) and the dispatcher (allgather)", () => {
    const p = parseMoeSweep(['--experts', '8', '--topk', '2', '--ep', '4', '--tp', '2', '--sp', '--json']);
    if (!('args' in p)) throw new Error(JSON.stringify(p));
    expect(p.json).toBe(true);
    expect(p.args.layout).toEqual({ tp: 2, sp: true, ep: 4, etp: 2, dispatcher: 'allgather' });
    expect(p.args.config).toMatchObject({ numMoeExperts: 8, moeRouterTopk: 2, moeExpertCapacityFactor: null });
    const q = parseMoeSweep([
      '--experts',
      '8',
      '--capacity',
      '1.5',
      '--drop-policy',
      'position',
      '--score',
      'sigmoid',
      '--skew',
      '2',
      '--dispatcher',
      'alltoall',
    ]);
    if (!('args' in q)) throw new Error(JSON.stringify(q));
    expect(q.args.config).toMatchObject({
      moeExpertCapacityFactor: 1.5,
      moeTokenDropPolicy: 'position',
      moeRouterScoreFunction: 'sigmoid',
      routerSkew: 2,
    });
    expect(q.args.layout.dispatcher).toBe('alltoall');
  });

  it('refuse each bad input naming the flag and its legal values', () => {
    expect(refusal(['--experts', '6', '--ep', '4'])).toMatch(/^--ep: ep 4 does not divide 6 experts.*\{1, 2, 3, 6\}/);
    expect(refusal(['--experts', '8', '--topk', '9'])).toMatch(/^--topk: .*write an integer in \[1, 8\]/);
    expect(refusal(['--experts', '8', '--ep', '4', '--etp', '8', '--ffn', '16'])).toMatch(
      /^--ep\/--etp: .*32 ranks, more than the 16/,
    );
    expect(refusal(['--experts', '8', '--etp', '3', '--ffn', '16'])).toMatch(
      /^--etp: etp 3 does not divide moeFfnHiddenSize 16.*\{1, 2, 4, 8, 16\}/,
    );
    expect(refusal(['--experts', '8', '--capacity', '0'])).toMatch(/^--capacity is "0"; write a number > 0/);
    expect(refusal(['--experts', '8', '--tp', '2', '--ep', '2'])).toMatch(/^--sp: .*moe_layer\.py:629-633, ValueError/);
    expect(refusal(['--experts', '8', '--m036'])).toMatch(/^--m036 shows TP > 1 without SP/);
    expect(refusal(['--experts', '8', '--tp', '2', '--sp', '--shared-expert', '3'])).toMatch(
      /^--shared-expert: tp 2 does not divide moeSharedExpertIntermediateSize 3/,
    );
    expect(refusal(['--topk', '2'])).toMatch(/^--experts is missing/);
    expect(refusal(['--experts', '8', '--dispatcher', 'flex'])).toMatch(
      /--dispatcher is "flex"; write alltoall or allgather/,
    );
    expect(refusal(['--experts', '8', '--nonsense'])).toMatch(/nonsense/);
  });

  it('accepts TP without SP as the M036 demonstration', () => {
    const p = parseMoeSweep(['--experts', '8', '--tp', '2', '--ep', '2', '--etp', '1', '--m036']);
    expect('args' in p && p.args.demonstration).toBe(true);
  });
});

it('npm run sweep -- --experts with E not divisible by EP exits 2 with the message, before any browser starts', async () => {
  const r = await runCli('scripts/bench/sweep.ts', '--experts', '6', '--topk', '2', '--ep', '4');
  expect(r.code).toBe(2);
  expect(r.stderr).toMatch(/sweep: --ep: ep 4 does not divide 6 experts/);
  expect(r.stdout).toBe('');
}, 60_000);

describe('npm run sweep -- --experts … --layer', () => {
  it('builds the whole layer: s = tokens·tp, b 1, the heads and groups given, vocab 0, the layout’s tp and SP', () => {
    const p = parseMoeSweep(['--experts', '8', '--topk', '2', '--ep', '4', '--tp', '2', '--sp', '--layer']);
    if (!('args' in p)) throw new Error(JSON.stringify(p));
    expect(p.layer).toMatchObject({ s: 32, b: 1, h: 32, heads: 4, groups: 2, vocab: 0, tp: 2, sp: true, seed: 41 });
    expect(parseMoeSweep(['--experts', '8', '--ep', '4'])).not.toHaveProperty('layer');
    expect(p).not.toHaveProperty('pattern');
  });

  it('stacks --layers L with --moe-layer-freq as Megatron reads it, refusing a pattern of another length', () => {
    const p = parseMoeSweep(['--experts', '8', '--layer', '--layers', '4', '--moe-layer-freq', '([1]+[0])*2']);
    if (!('args' in p)) throw new Error(JSON.stringify(p));
    expect(p.pattern).toEqual([true, false, true, false]);
    const q = parseMoeSweep(['--experts', '8', '--layer', '--layers', '3', '--moe-layer-freq', '2']);
    expect(q).toMatchObject({ pattern: [true, false, true] });
    expect(refusal(['--experts', '8', '--layer', '--layers', '3', '--moe-layer-freq', '[1,0]'])).toMatch(
      /^--moe-layer-freq gives 2 layers, the model has 3 .*gpt_layer_specs\.py:653-657/,
    );
    expect(parseMoeSweep(['--experts', '8', '--layer', '--vocab', '64'])).toMatchObject({ layer: { vocab: 64 } });
    expect(refusal(['--experts', '8', '--vocab', '64'])).toMatch(/--vocab is for the whole layer; add --layer/);
    expect(refusal(['--experts', '8', '--layer', '--layers', '2', '--vocab', '64'])).toMatch(/--vocab runs one layer/);
    expect(refusal(['--experts', '8', '--layers', '3'])).toMatch(
      /--layers and --moe-layer-freq stack whole layers; add --layer/,
    );
    expect(refusal(['--experts', '8', '--layer', '--moe-layer-freq', '[1,2]'])).toMatch(
      /^--moe-layer-freq is "\[1,2\]": 2 is neither 0/,
    );
  });

  it('refuses bad heads and groups, TP without SP once, and --m036 with --layer, each naming its flag', () => {
    const heads = refusal(['--experts', '8', '--tp', '2', '--sp', '--layer', '--heads', '3']);
    expect(heads).toMatch(
      /^--heads: hidden size h \(32\) must be divisible by heads \(3\).*legal heads for h = 32 are 1, 2, 4, 8, 16, 32/m,
    );
    expect(heads).toMatch(/^--groups: heads \(3\) must be divisible by query groups \(2\)/m);
    const noSp = refusal(['--experts', '8', '--tp', '2', '--layer']);
    expect(noSp.match(/moe_layer\.py:629-633/g)).toHaveLength(1);
    expect(noSp).toMatch(/^--sp: /m);
    expect(refusal(['--experts', '8', '--tp', '2', '--layer', '--m036'])).toMatch(
      /--m036 runs the block alone; leave out --layer/,
    );
  });

  it('exits 2 on a bad --heads before any browser starts', async () => {
    const r = await runCli('scripts/bench/sweep.ts', '--experts', '8', '--layer', '--heads', '5');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/sweep: --heads: hidden size h \(32\) must be divisible by heads \(5\)/);
    expect(r.stdout).toBe('');
  }, 60_000);
});

describe('npm run sweep -- --moe-grid', () => {
  it('covers the issue grid: 192 distinct points, each a layout and config the ranks accept', () => {
    expect(moeGrid).toHaveLength(192);
    expect(new Set(moeGrid.map((p) => JSON.stringify(p))).size).toBe(192);
    const sizes = { h: 16, tokens: 8, ffn: 6, seed: 41 };
    for (const p of moeGrid) {
      const a = moeGridArgs(p, sizes);
      expect([...moeConfigErrors(a.config), ...moeLayoutErrors(a.config, a.layout)], JSON.stringify(p)).toEqual([]);
      expect(moeWorld(a.layout)).toBeLessThanOrEqual(8);
    }
    for (const [key, values] of [
      ['ep', [1, 2, 4]],
      ['etp', [1, 2]],
      ['tp', [1, 2]],
      ['E', [4, 8]],
      ['k', [1, 2]],
      ['capacity', [undefined, 1]],
      ['dispatcher', ['alltoall', 'allgather']],
    ] as const satisfies readonly (readonly [keyof MoeGridPoint, readonly unknown[]])[])
      expect(new Set<unknown>(moeGrid.map((p) => p[key])), key).toEqual(new Set<unknown>(values));
  });

  it('refuses an odd expert width (ETP 2 splits it) and a bad number before a browser starts, exit 2', async () => {
    const odd = await runCli('scripts/bench/sweep.ts', '--moe-grid', '--ffn', '5');
    expect(odd.code).toBe(2);
    expect(odd.stderr).toMatch(/--ffn is 5; ETP 2 splits it, so write an even width/);
    const bad = await runCli('scripts/bench/sweep.ts', '--moe-grid', '--h', 'x');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--h is "x"; write a whole number ≥ 1/);
  }, 60_000);
});
