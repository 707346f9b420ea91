// The recorder stamps each event with the pass its rank set (TraceRecorder.setPass), which the timeline bands.
import { expect, test } from 'vitest';
import type { TraceEvent } from '../../../src/core/trace-event.ts';
import { TraceRecorder } from '../../../src/core/trace-recorder.ts';

const event = (op: string, extra: Partial<TraceEvent> = {}): TraceEvent => ({
  rank: 0,
  stream: 'compute',
  op,
  shape: [],
  bytes: 0,
  t0: 0,
  t1: 1,
  phases: [],
  ...extra,
});

test('events take the pass set when they are recorded; one carrying its own keeps it; none after clearing it', () => {
  const t = new TraceRecorder();
  t.record(event('before'));
  t.setPass('forward');
  t.record(event('a'));
  t.setPass('backward');
  t.record(event('b'));
  t.record(event('own', { phase: 'finalize' }));
  t.setPass(undefined);
  t.record(event('after'));
  expect(t.drain().map((e) => [e.op, e.phase])).toEqual([
    ['before', undefined],
    ['a', 'forward'],
    ['b', 'backward'],
    ['own', 'finalize'],
    ['after', undefined],
  ]);
});
