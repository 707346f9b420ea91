// `npm run sweep` with the pipeline flags: which flags switch to a pipeline run, and the refusals as a
// user meets them (exit code 2 and the message, before any browser starts).
import { describe, expect, it } from 'vitest';
import { pipelineFlagsGiven, pipelineFromFlags } from '../../../scripts/bench/sweep-pipeline.ts';
import { runCli } from './run-cli.ts';

const base = { tp: '2', sp: false, json: false, 'distributed-optimizer': false, baseline: false };

describe('the sweep in pipeline mode', () => {
  it('starts with any pipeline flag and reads them', () => {
    expect(pipelineFlagsGiven(base)).toBe(false);
    expect(pipelineFlagsGiven({ ...base, pp: '2' })).toBe(true);
    expect(pipelineFlagsGiven({ ...base, 'distributed-optimizer': true })).toBe(true);
    const s = pipelineFromFlags(
      { ...base, pp: '2', dp: '2', 'micro-batches': '4', schedule: 'zb-h1', 'distributed-optimizer': true },
      { preset: 'classroom' },
    );
    expect(s.model).toMatchObject({ p: 2, m: 4, schedule: 'zb-h1', layers: 8 });
    expect(s.model.layer.tp).toBe(2);
    expect(s.sync).toBe('distributed-optimizer');
  });

  it('takes one TP degree', () => {
    expect(() => pipelineFromFlags({ ...base, tp: '1,2', pp: '2' }, {})).toThrow(
      '--tp: a pipeline run takes one TP degree (the mesh is tp × pp × dp), got 1,2; write e.g. --tp 2.',
    );
  });

  it('refuses bad input with the rule and the legal values, exit code 2', async () => {
    const cases: [string[], RegExp][] = [
      [['--tp', '1', '--pp', '4', '--layers', '6'], /--layers: .*legal L up to 64 at this p and v: 4, 8, 12/],
      [['--tp', '1', '--pp', '4', '--vpp', '2', '--micro-batches', '6'], /--micro-batches: .*Legal m: 4, 8, 12, 16/],
      [
        ['--tp', '2', '--pp', '4', '--dp', '4'],
        /--dp: t × p × d = 2 × 4 × 4 = 32 rank workers.*legal d at t = 2, p = 4: 1, 2\./,
      ],
      [
        ['--tp', '1', '--dp', '2', '--global-batch', '3'],
        /--micro-batches: the global batch G = 3 sequences must be a multiple of b·d = 1·2 = 2/,
      ],
    ];
    for (const [args, message] of cases) {
      const r = await runCli('scripts/bench/sweep.ts', ...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
    }
  }, 60_000);
});
