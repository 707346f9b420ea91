import { describe, expect, test } from 'vitest';
import { runLatest } from '../../../src/session/run-latest.ts';

/** A promise with its resolve outside, to hold a run open until the test lets it go. */
function gate(): { open: () => void; wait: Promise<void> } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { open, wait };
}

describe('runLatest', () => {
  test('requests made while a run is in flight coalesce into one run of the latest', async () => {
    const ran: string[] = [];
    const first = gate();
    const q = runLatest<string>({
      key: (r) => r,
      run: async (r) => {
        ran.push(r);
        if (r === 'a') await first.wait;
      },
    });
    q.request('a');
    q.request('b');
    q.request('c');
    q.request('d');
    first.open();
    await q.idle();
    expect(ran).toEqual(['a', 'd']);
  });

  test('a request with another key aborts the run in flight; one with the same key lets it finish', async () => {
    const signals: AbortSignal[] = [];
    const hold = gate();
    const q = runLatest<{ key: string; n: number }>({
      key: (r) => r.key,
      run: async (_, signal) => {
        signals.push(signal);
        await hold.wait;
      },
    });
    q.request({ key: 'x', n: 1 });
    q.request({ key: 'x', n: 2 });
    expect(signals[0]!.aborted).toBe(false);
    q.request({ key: 'y', n: 3 });
    expect(signals[0]!.aborted).toBe(true);
    expect((signals[0]!.reason as DOMException).name).toBe('AbortError');
    hold.open();
    await q.idle();
    expect(signals).toHaveLength(2);
    expect(signals[1]!.aborted).toBe(false);
  });

  test('an aborted run that throws is not an error; a failing run is reported and the queue goes on', async () => {
    const errors: [unknown, string][] = [];
    const ran: string[] = [];
    const hold = gate();
    const q = runLatest<string>({
      key: (r) => r,
      run: async (r, signal) => {
        ran.push(r);
        if (r === 'stale') {
          await hold.wait;
          signal.throwIfAborted();
        }
        if (r === 'bad') throw new Error('bad input');
      },
      onError: (e, r) => errors.push([e, r]),
    });
    q.request('stale');
    q.request('bad');
    hold.open();
    await q.idle();
    q.request('good');
    await q.idle();
    expect(ran).toEqual(['stale', 'bad', 'good']);
    expect(errors.map(([e, r]) => [(e as Error).message, r])).toEqual([['bad input', 'bad']]);
  });

  test('idle resolves at once when nothing was asked, and after a request that comes in during the last run', async () => {
    const ran: number[] = [];
    const q = runLatest<number>({
      key: String,
      run: async (n) => {
        ran.push(n);
        if (n === 1) q.request(2); // asked from inside the run: still drained before idle resolves
      },
    });
    await q.idle();
    q.request(1);
    await q.idle();
    expect(ran).toEqual([1, 2]);
  });
});
