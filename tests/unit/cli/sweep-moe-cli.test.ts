// `npm run sweep -- --experts …`: the MoE flags' parser, and the CLI refusing bad input as a user runs it.
import { describe, expect, it } from 'vitest';
import { parseMoeSweep } from '../../../scripts/bench/sweep-moe-args.ts';
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
