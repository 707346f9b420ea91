import { expect, test } from 'vitest';
import { hostTensor } from '../../../src/comm/host-tensor.ts';
import { createInProcessGroup } from '../../../src/comm/in-process.ts';
import { TraceRecorder } from '../../../src/core/trace-recorder.ts';
import { GroupTurns } from '../../../src/ranks/group-turns.ts';

// Two ranks, each in two groups (real in-process collectives), every call issued at once without
// awaiting: under GroupTurns a call of one group starts only after the calls issued before it in
// the other group have finished, while calls of one group may run together.
test('calls across groups run in issue order, each after the other groups’ earlier calls', async () => {
  const traces = [new TraceRecorder(), new TraceRecorder()];
  const tp = createInProcessGroup(2, { sinks: traces });
  const dp = createInProcessGroup(2, { sinks: traces });
  const runs = [0, 1].map(async (r) => {
    const turns = new GroupTurns();
    const a = turns.around('tp', tp[r]!);
    const b = turns.around('dp', dp[r]!);
    const x = () => hostTensor([4], Float32Array.from([1, 2, 3, r]));
    const results = await Promise.all([
      a.allReduce(x(), 'sum', 'tp.1'),
      a.allReduce(x(), 'sum', 'tp.2'),
      b.allReduce(x(), 'sum', 'dp.1'),
      a.allReduce(x(), 'sum', 'tp.3'),
    ]);
    return results.map((t) => [...t.data]);
  });
  const [r0, r1] = await Promise.all(runs);
  expect(r0).toEqual(r1);
  expect(r0![0]).toEqual([2, 4, 6, 1]);
  for (const t of traces) {
    const e = Object.fromEntries(t.peek().map((ev) => [ev.comm!.tensor!, ev]));
    // dp.1 starts after tp.1 and tp.2 end; tp.3 after dp.1 ends.
    expect(e['dp.1']!.t0).toBeGreaterThanOrEqual(Math.max(e['tp.1']!.t1, e['tp.2']!.t1));
    expect(e['tp.3']!.t0).toBeGreaterThanOrEqual(e['dp.1']!.t1);
    expect(t.peek().map((ev) => ev.comm!.tensor)).toEqual(['tp.1', 'tp.2', 'dp.1', 'tp.3']);
  }
});

test('a failed call does not hold up the other groups', async () => {
  const turns = new GroupTurns();
  const failed = turns.run('tp', () => Promise.reject(new Error('broken')));
  const next = turns.run('dp', async () => 'ran');
  await expect(failed).rejects.toThrow('broken');
  await expect(next).resolves.toBe('ran');
});
