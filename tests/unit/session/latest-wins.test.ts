import { describe, expect, test } from 'vitest';
import { LatestWins, type LatestRequest } from '../../../src/session/latest-wins.ts';

/** A promise settled from outside, to choose which request resolves first. */
function later<T>(): { resolve: (v: T) => void; reject: (e: unknown) => void; promise: Promise<T> } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { resolve, reject, promise };
}

/** An element's render state as the helper's callbacks write it. */
interface Shown {
  value?: string;
  error?: string;
  progress: string[];
  settled: number;
}

function paintInto(shown: Shown, work: (req: LatestRequest) => Promise<string>) {
  return {
    work,
    done: (v: string) => (shown.value = v),
    failed: (e: unknown) => (shown.error = String(e)),
    settled: () => shown.settled++,
  };
}

describe('LatestWins', () => {
  test('an older request resolving after a newer one never paints', async () => {
    const latest = new LatestWins();
    const shown: Shown = { progress: [], settled: 0 };
    const older = later<string>();
    const newer = later<string>();
    let olderReq: LatestRequest | undefined;
    const a = latest.run(paintInto(shown, (req) => ((olderReq = req), older.promise)));
    const b = latest.run(paintInto(shown, () => newer.promise));
    newer.resolve('newer');
    await b;
    expect(shown).toEqual({ value: 'newer', progress: [], settled: 1 });
    older.resolve('older');
    await a;
    expect(shown).toEqual({ value: 'newer', progress: [], settled: 1 });
    expect(olderReq?.current).toBe(false);
    expect(olderReq?.signal.aborted).toBe(true);
  });

  test("an older request's late failure and progress never paint either", async () => {
    const latest = new LatestWins();
    const shown: Shown = { progress: [], settled: 0 };
    const older = later<string>();
    let say: (line: string) => void = () => {};
    const a = latest.run(
      paintInto(shown, (req) => {
        say = (line) => void (req.current && shown.progress.push(line));
        return older.promise;
      }),
    );
    say('older, half way');
    await latest.run(paintInto(shown, async () => 'newer'));
    say('older, almost done');
    older.reject(new Error('older failed'));
    await a;
    expect(shown).toEqual({ value: 'newer', progress: ['older, half way'], settled: 1 });
  });

  test('cancel aborts the current request and paints its failure; drop paints nothing', async () => {
    const latest = new LatestWins();
    const shown: Shown = { progress: [], settled: 0 };
    const untilAborted = (req: LatestRequest) =>
      new Promise<string>((_, reject) => req.signal.addEventListener('abort', () => reject(req.signal.reason)));
    const cancelled = latest.run(paintInto(shown, untilAborted));
    latest.cancel(new Error('cancelled'));
    await cancelled;
    expect(shown).toEqual({ error: 'Error: cancelled', progress: [], settled: 1 });
    const dropped = latest.run(paintInto(shown, untilAborted));
    latest.drop();
    await dropped;
    expect(shown).toEqual({ error: 'Error: cancelled', progress: [], settled: 1 });
  });

  test('start alone (an animation): the older loop sees itself superseded at its next check', () => {
    const latest = new LatestWins();
    const first = latest.start();
    expect(first.current).toBe(true);
    const second = latest.start();
    expect([first.current, second.current]).toEqual([false, true]);
    expect(() => first.signal.throwIfAborted()).toThrow('a newer request replaced this one');
    latest.drop();
    expect(second.current).toBe(false);
  });
});
