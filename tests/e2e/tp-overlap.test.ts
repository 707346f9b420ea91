// Chunked TP overlap on the built page: the setting, the chunks on the timeline, the cluster panel's --tp-comm-overlap.
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { waitShownRun } from './shown-run.ts';
import { type OpenPage } from '../../scripts/device/browser-run.ts';
import { openE2ePage } from './built-page.ts';

const runTimeout = 120_000;
let open: OpenPage;
let page: Page;

/** Waits until the page shows a finished run whose hash has every `key=value` of `parts`. */
const shownRun = (...parts: string[]): Promise<void> => waitShownRun(page, runTimeout, ...parts);

/** The cluster panel's exposed TP communication (ms per step) in the SP row at t. */
async function exposedTp(t: number): Promise<number> {
  const cell = page.locator(`tp-cluster-panel tr[data-tp="${t}"][data-sp="true"] td[data-exposed-tp-ms]`);
  await expect.poll(() => cell.count(), { timeout: runTimeout }).toBe(1);
  return Number(await cell.getAttribute('data-exposed-tp-ms'));
}

describe('chunked TP overlap (built page)', () => {
  beforeAll(async () => {
    open = await openE2ePage('/#tpoverlap=chunks:4&sp=1&tp=4', { viewport: { width: 1280, height: 900 } });
    page = open.page;
  }, 180_000);
  afterAll(async () => {
    await open?.close();
  });

  test('at the classroom size (s = 8: 2 tokens per rank at t = 4) chunks:4, one chunk per rank, runs: the timeline draws every GEMM chunk of the MLP pair and each ring exchange on every rank lane', async () => {
    await shownRun('tp=4', 'sp=1', 'tpoverlap=chunks:4');
    expect(await page.locator('tp-controls [data-error-for="tpOverlapChunks"]').count()).toBe(0);
    // c = 4 = t: one round (m = 1) per collective, four GEMM chunks in ring order (the rank's own
    // first); each all-gather and reduce-scatter is t − 1 = 3 ring exchanges, named by the GEMM
    // chunk they feed (gather) or whose partial they send on (reduce-scatter).
    const exchanges = [1, 2, 3].flatMap((k) => [
      `ln2.gather[${k + 1}/4]`,
      `mlp.reduce.backward[${k + 1}/4]`,
      `mlp.reduce[${k}/4]`,
      `mlp.dgrad.reduce[${k}/4]`,
    ]);
    for (const rank of [0, 1, 2, 3]) {
      for (const op of exchanges)
        expect(
          await page.locator(`tp-timeline rect[data-rank="${rank}"][data-kind="comm"][data-op="${op}"]`).count(),
        ).toBe(1);
      for (let j = 1; j <= 4; j++)
        for (const op of [`mlp.gate[${j}/4]`, `mlp.down[${j}/4]`, `mlp.up.wgrad[${j}/4]`])
          expect(await page.locator(`tp-timeline rect[data-rank="${rank}"][data-op="${op}"]`).count()).toBe(1);
    }
    // The rank workers ran the chunked layer and the oracle against TP = 1 passed.
    await expect
      .poll(() => page.locator('tp-oracle-badge .badge').getAttribute('data-pass'), { timeout: runTimeout })
      .toBe('true');
  });

  test('chunks:2 at t = 4 runs with two shards per chunk (each a GEMM of its own) and the oracle passing; chunks:3 is refused naming the legal counts', async () => {
    await page.evaluate(() => (location.hash = '#tpoverlap=chunks:2&sp=1&tp=4'));
    await shownRun('tp=4', 'sp=1', 'tpoverlap=chunks:2');
    expect(await page.locator('tp-controls [data-error-for="tpOverlapChunks"]').count()).toBe(0);
    for (const rank of [0, 1, 2, 3])
      for (const op of ['mlp.gate[1/2]#1', 'mlp.gate[1/2]#2', 'mlp.gate[2/2]#1', 'mlp.gate[2/2]#2'])
        expect(await page.locator(`tp-timeline rect[data-rank="${rank}"][data-op="${op}"]`).count()).toBe(1);
    await expect
      .poll(() => page.locator('tp-oracle-badge .badge').getAttribute('data-pass'), { timeout: runTimeout })
      .toBe('true');
    await page.evaluate(() => (location.hash = '#tpoverlap=chunks:3&sp=1&tp=4'));
    const error = page.locator('tp-controls [data-error-for="tpOverlapChunks"]');
    await expect.poll(() => error.count(), { timeout: runTimeout }).toBeGreaterThan(0);
    expect(await error.first().textContent()).toMatch(
      /chunks:3 must divide t = 4 or be t times a divisor of each rank's s\/t = 8\/4 tokens.*legal chunk counts are 2, 4, 8/,
    );
    await page.evaluate(() => (location.hash = '#tpoverlap=chunks:4&sp=1&tp=4'));
    await shownRun('tp=4', 'sp=1', 'tpoverlap=chunks:4');
  });

  test('the cluster panel prices --tp-comm-overlap on the SP rows: exposed TP communication at t = 4 is lower than with tpoverlap=off', async () => {
    expect(await page.locator('tp-cluster-panel [data-cluster-tp-overlap]').textContent()).toMatch(/--tp-comm-overlap/);
    const chunked = await exposedTp(4);
    await page.evaluate(() => (location.hash = '#tpoverlap=off&sp=1&tp=4'));
    await shownRun('tp=4', 'sp=1');
    await expect.poll(() => page.locator('tp-cluster-panel [data-cluster-tp-overlap]').count()).toBe(0);
    await expect.poll(() => exposedTp(4), { timeout: runTimeout }).toBeGreaterThan(chunked);
  });
});
