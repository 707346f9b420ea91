// Live memory under the timeline end to end: the production build, the ranks' recorded buffers drawn per rank,
// following the timeline's zoom, and replayed from the plan where the page has no WebGPU.
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { waitShownRun } from './shown-run.ts';
import { type OpenPage } from '../../scripts/device/browser-run.ts';
import { openE2ePage } from './built-page.ts';
import type { TpTimeline } from '../../src/ui/timeline/tp-timeline.ts';

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

  test('each rank gets a lane of live bytes stacked by class, its peak in backward (each kept activation freed after its last backward op)', async () => {
    await shownRun('tp=2');
    await expect.poll(() => chart().locator('svg[data-lane]').count(), { timeout: runTimeout }).toBe(2);
    for (const lane of [0, 1]) {
      const svg = chart().locator(`svg[data-lane="${lane}"]`);
      const classes = await svg
        .locator('path[data-class]')
        .evaluateAll((ps) => ps.map((p) => p.getAttribute('data-class')));
      expect(classes).toEqual(['weights', 'optimizerState', 'gradients', 'activations', 'workspace', 'staging']);
      const peak = Number(await svg.locator('g[data-peak]').getAttribute('data-peak'));
      const peakAt = Number(await svg.locator('g[data-peak]').getAttribute('data-peak-at'));
      const predicted = Number(await svg.locator('line[data-predicted]').getAttribute('data-predicted'));
      expect(predicted).toBeGreaterThan(0);
      expect(peak).toBeGreaterThan(0);
      // The rank's first backward op starts before the peak: forward keeps, backward frees.
      const backwardAt = await page
        .locator('tp-timeline')
        .evaluate(
          (el: Element & { timeline?: { events: { rank: number; phase: string; t0: number }[] } }, rank: number) =>
            Math.min(
              ...(el.timeline?.events ?? []).filter((e) => e.rank === rank && e.phase === 'backward').map((e) => e.t0),
            ),
          lane,
        );
      expect(peakAt).toBeGreaterThanOrEqual(backwardAt);
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

  test('the memory chart shows the timeline’s time window: zoomed by the wheel, zoomed to a span, back to the whole step on reset', async () => {
    await shownRun('tp=2');
    const timeline = page.locator('tp-timeline');
    const shownOf = (lane: number) =>
      chart()
        .locator(`svg[data-lane="${lane}"]`)
        .evaluate((svg) => [Number(svg.getAttribute('data-t0')), Number(svg.getAttribute('data-t1'))]);
    const visible = () => timeline.evaluate((el: TpTimeline) => el.visibleDomain());
    const whole = await visible();
    await expect.poll(() => shownOf(0)).toEqual(whole);
    // The wheel over the timeline's plot zooms in around the pointer.
    const box = (await timeline.locator('svg.plot').boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2);
    await page.mouse.wheel(0, -600);
    await expect.poll(async () => (await visible())[1] - (await visible())[0]).toBeLessThan(whole[1]! - whole[0]!);
    const wheeled = await visible();
    for (const lane of [0, 1]) await expect.poll(() => shownOf(lane)).toEqual(wheeled);
    const span = whole[1]! - whole[0]!;
    await timeline.evaluate(
      (el: TpTimeline, [a, b]) => el.zoomTo(a!, b!),
      [whole[0]! + 0.2 * span, whole[0]! + 0.4 * span],
    );
    const zoomed = await visible();
    expect(zoomed[0]).toBeCloseTo(whole[0]! + 0.2 * span, 6);
    for (const lane of [0, 1]) await expect.poll(() => shownOf(lane)).toEqual(zoomed);
    // In the timeline's columns: a time both axes label sits at the same x (within a pixel).
    const ticks = (where: string) =>
      page.locator(`${where} g.tick`).evaluateAll((gs) =>
        gs.map((g) => {
          const r = g.querySelector('line')!.getBoundingClientRect();
          return [g.querySelector('text')?.textContent ?? '', r.left + r.width / 2] as const;
        }),
      );
    const timelineTicks = new Map(await ticks('tp-timeline svg.plot'));
    const shared = (await ticks('tp-timeline ~ tp-live-memory svg[data-lane="0"]')).filter(([t]) =>
      timelineTicks.has(t),
    );
    expect(shared.length).toBeGreaterThan(0);
    for (const [t, x] of shared) expect(Math.abs(x - timelineTicks.get(t)!), t).toBeLessThan(1);
    await timeline.getByRole('button', { name: 'Reset zoom' }).click();
    for (const lane of [0, 1]) await expect.poll(() => shownOf(lane)).toEqual(whole);
  });

  test('without WebGPU the chart is replayed from the plan and labelled so: a lane per rank, no staging', async () => {
    const context = await page
      .context()
      .browser()!
      .newContext({ viewport: { width: 1280, height: 900 } });
    const bare = await context.newPage();
    try {
      await bare.addInitScript(() => Object.defineProperty(Navigator.prototype, 'gpu', { get: () => undefined }));
      await bare.goto(new URL('/#tp=2', open.base).href);
      await waitShownRun(bare, runTimeout, 'tp=2');
      const replayed = bare.locator('tp-timeline ~ tp-live-memory[data-replayed]');
      await expect.poll(() => replayed.locator('svg[data-lane]').count(), { timeout: runTimeout }).toBe(2);
      expect(await replayed.locator('h3').textContent()).toMatch(/replayed from the plan/);
      expect(await replayed.locator('p.note').first().textContent()).toMatch(
        /^Replayed from the plan: no WebGPU here, so nothing ran/,
      );
      await replayed.locator('svg[data-lane="0"] g[data-peak] rect').hover();
      const tip = replayed.locator('.tip');
      await expect.poll(() => tip.isVisible()).toBe(true);
      const text = (await tip.textContent()) ?? '';
      expect(text).toMatch(/^rank 0: peak [\d.]+ [KMG]?i?B at /);
      expect(text).toMatch(/wfc1 · weights · /);
      expect(text).not.toMatch(/staging/);
      expect(
        Number(await replayed.locator('svg[data-lane="1"] line[data-predicted]').getAttribute('data-predicted')),
      ).toBeGreaterThan(0);
    } finally {
      await context.close();
    }
  });
});
