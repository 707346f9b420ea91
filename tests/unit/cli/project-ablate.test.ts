// `npm run project -- --ablate`: the overlap ablation as a user runs it (a child process).
import { describe, expect, it } from 'vitest';
import { parseProjectArgs } from '../../../scripts/project/project-args.ts';
import type { OverlapAblation } from '../../../src/projection/studies/overlap-ablation.ts';
import { runCli } from './run-cli.ts';

const run = (...args: string[]) => runCli('scripts/project/project.ts', ...args);

describe('npm run project -- --ablate', () => {
  it('reads --ablate and --no-overlap-p2p-communication', () => {
    expect(parseProjectArgs([]).ablate).toBe(false);
    const a = parseProjectArgs(['--ablate', '--pp', '2', '--vpp', '2', '--no-overlap-p2p-communication']);
    expect(a.ablate).toBe(true);
    expect(a.setup.overlapP2pComm).toBe(false);
  });

  it('--json gives every row with its step, exposed communication per group and memory; the table the same rows', async () => {
    const json = await run('--ablate', '--tp', '2', '--json');
    expect(json.code).toBe(0);
    const a = JSON.parse(json.stdout) as OverlapAblation;
    expect(a.applicable).toEqual(['asyncDgrad', 'overlapGradReduce']);
    expect(a.notApplicable.find((x) => x.flag === 'tpCommOverlap')?.reason).toMatch(/--sequence-parallel/);
    expect(a.rows).toHaveLength(4);
    for (const r of a.rows) {
      if (!r.result.ok) throw new Error(`row ${r.flags.join('+')} not projected`);
      expect(Object.keys(r.result.exposedByGroup).sort()).toEqual(['cp', 'dp', 'pp', 'tp']);
      expect(r.result.peakBytes).toBeGreaterThan(0);
    }
    const table = await run('--ablate', '--tp', '2');
    expect(table.code).toBe(0);
    for (const label of ['none', 'dgrad-AR', 'grad-reduce', 'dgrad-AR + grad-reduce'])
      expect(table.stdout).toMatch(new RegExp(`^${label.replace(/\+/g, '\\+')}\\s`, 'm'));
    expect(table.stdout).toMatch(/TP-chunks\s+not applicable: needs --sequence-parallel/);
  }, 60_000);

  it('exits 2 asking for one --tp', async () => {
    const r = await run('--ablate');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--ablate projects one layout: give one --tp degree/);
  }, 60_000);
});
