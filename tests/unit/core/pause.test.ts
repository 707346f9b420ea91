import { afterEach, describe, expect, test, vi } from 'vitest';
import { pause } from '../../../src/core/pause.ts';

describe('pause', () => {
  afterEach(() => vi.unstubAllGlobals());

  test('resolves no earlier than asked, on Atomics.waitAsync', async () => {
    // A lower bound only (Node's Atomics.waitAsync alone wakes early: 0.3 ms asked, 0.1 ms seen);
    // how late it wakes is the bench's to measure, not a test's.
    for (const ms of [0.05, 0.3, 2]) {
      const t0 = performance.now();
      await pause(ms);
      expect(performance.now() - t0, `${ms} ms`).toBeGreaterThanOrEqual(ms);
    }
  });

  test('0 ms resolves in a microtask, before any task', async () => {
    const order: string[] = [];
    setTimeout(() => order.push('task'), 0);
    await pause(0);
    order.push('pause');
    await new Promise((r) => setTimeout(r, 5));
    expect(order).toEqual(['pause', 'task']);
  });

  test('without SharedArrayBuffer (a page not cross-origin isolated) it falls back to setTimeout', async () => {
    vi.stubGlobal('SharedArrayBuffer', undefined);
    const t0 = performance.now();
    await pause(1.5);
    // Node's setTimeout takes whole milliseconds (1.5 → 1): the rest is waited for again.
    expect(performance.now() - t0).toBeGreaterThanOrEqual(1.5);
  });

  test.each([-1, Number.NaN, Number.POSITIVE_INFINITY])('%s ms is refused with the value named', (ms) => {
    expect(() => pause(ms)).toThrow(`pause: ${ms} ms is not a finite time ≥ 0.`);
  });
});
