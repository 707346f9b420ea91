// Live memory under the timeline end to end: the production build, the ranks' recorded buffers drawn per rank.
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { waitShownRun } from './shown-run.ts';
import { type OpenPage } from '../../scripts/browser-run.ts';
import { openE2ePage } from './built-page.ts';

const runTimeout = 150_000;
let open: OpenPage;
let page: Page;

/** Waits until the page shows a finished run whose hash has every `key=value` of `parts`. */
const shownRun = (...parts: string[]): Promise<void> => waitShownRun(page, runTimeout, ...parts);

const chart = () => page.locator('tp-timeline ~ tp-live-memory');

describe('live memory under the timeline (built page)', () => {
  beforeAll(async () => {
    open = await openE2ePage('/#tp=2&machine=custom', { viewport: { width: 1280, height: 900 } });
    page = open.page;
  }, 180_000);
  afterAll(async () => {
    await open?.close();
  });

  test('each rank gets a lane of live bytes stacked by class, its peak at least the accounting’s weights + gradients + activations', async () => {
    await shownRun('tp=2');
    await expect.poll(() => chart().locator('svg[data-lane]').count(), { timeout: runTimeout }).toBe(2);
    for (const lane of [0, 1]) {
      const svg = chart().locator(`svg[data-lane="${lane}"]`);
      const classes = await svg
        .locator('path[data-class]')
        .evaluateAll((ps) => ps.map((p) => p.getAttribute('data-class')));
      expect(classes).toEqual(['weights', 'optimizerState', 'gradients', 'activations', 'workspace', 'staging']);
      const peak = Number(await svg.locator('g[data-peak]').getAttribute('data-peak'));
      const predicted = Number(await svg.locator('line[data-predicted]').getAttribute('data-predicted'));
      expect(predicted).toBeGreaterThan(0);
      expect(peak).toBeGreaterThanOrEqual(predicted);
    }
  }, 200_000);

  test('hovering rank 0’s peak lists the tensors alive at it: the attention probabilities kept for backward, the weights, the staging pool', async () => {
    await shownRun('tp=2');
    const marker = chart().locator('svg[data-lane="0"] g[data-peak] rect');
    await marker.hover();
    const tip = chart().locator('.tip');
    await expect.poll(() => tip.isVisible()).toBe(true);
    const text = (await tip.textContent()) ?? '';
    expect(text).toMatch(/^rank 0: peak [\d.]+ [KMG]?i?B at /);
    expect(text).toMatch(/probs · activations kept for backward · /);
    expect(text).toMatch(/wfc1 · weights · /);
    expect(text).toMatch(/staging pool .* · communication staging · /);
  });

  test('the cluster panel draws the projection’s memory over a step with the same chart, in its lifetime classes', async () => {
    const cluster = page.locator('tp-cluster-panel tp-live-memory[data-cluster-memory]');
    await expect.poll(() => cluster.locator('svg[data-lane]').count(), { timeout: runTimeout }).toBeGreaterThan(0);
    const classes = await cluster
      .locator('svg[data-lane="0"] path[data-class]')
      .evaluateAll((ps) => ps.map((p) => p.getAttribute('data-class')));
    expect(classes).toEqual(['resident', 'perStep', 'perMicroBatch', 'transient']);
    expect(Number(await cluster.locator('svg[data-lane="0"] g[data-peak]').getAttribute('data-peak'))).toBeGreaterThan(
      0,
    );
  });
});
