// The machine picture end to end: the seeds' V100 box under both placements, the step and the timeline following; a DGX cluster summarized.
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type OpenPage } from '../../scripts/device/browser-run.ts';
import { openE2ePage } from './built-page.ts';
import { waitShownRun } from './shown-run.ts';

const runTimeout = 90_000;
let open: OpenPage;
let page: Page;

const picture = () => page.locator('tp-machine-picture');
const stepOf = async (placement: string): Promise<number> => {
  const p = picture().locator(`[data-placement-step="${placement}"]`);
  await p.waitFor({ timeout: runTimeout });
  return Number(await p.getAttribute('data-step-ms'));
};
const groupOf = (gpu: number) =>
  picture().locator(`svg[data-machine] g[data-gpu="${gpu}"]`).getAttribute('data-tp-group');
const bytesOf = async (link: string): Promise<number> =>
  Number(await picture().locator(`svg[data-machine] path[data-link="${link}"]`).getAttribute('data-bytes'));

describe('the machine picture (built page)', () => {
  beforeAll(async () => {
    open = await openE2ePage('/#tp=2', { viewport: { width: 1280, height: 900 } });
    page = open.page;
  }, 180_000);
  afterAll(async () => {
    await open?.close();
  });

  test("draws the seeds' box and moves the step when TP goes from one switch to across sockets", async () => {
    await picture().locator('button[data-placement="tp-switch"]').click();
    await expect
      .poll(() => page.evaluate(() => location.hash), { timeout: runTimeout })
      .toContain('placement=tp-switch');
    const under = await stepOf('tp-switch');
    expect(await groupOf(0)).toBe(await groupOf(1)); // GPU0 and GPU1: one TP pair under switch 0
    const crossUnder = await bytesOf('n0:smp:0-1'); // DP's gradient ring alone crosses the sockets
    await picture().locator('button[data-placement="tp-sockets"]').click();
    await expect
      .poll(() => page.evaluate(() => location.hash), { timeout: runTimeout })
      .toContain('placement=tp-sockets');
    const across = await stepOf('tp-sockets');
    expect(await groupOf(0)).toBe(await groupOf(4)); // GPU0 and GPU4: one TP pair across the sockets
    expect(await bytesOf('n0:smp:0-1')).toBeGreaterThan(crossUnder); // now every TP pair crosses too
    expect(across).toBeGreaterThan(under);
    // Each button shows its placement's step.
    await expect
      .poll(() => picture().locator('button[data-placement="tp-sockets"]').textContent())
      .toMatch(/TP across sockets.*ms/s);
    expect(await picture().locator('table[data-link-load] tbody tr').count()).toBeGreaterThan(0);
  });

  test("the page's timeline follows the placement: the TP collectives across sockets take longer than under one switch, and the hash keeps the choice", async () => {
    /** Rank 0's collectives on the timeline (ms, summed), the exposed total, the caption. */
    const timelineOf = async (placement: string) => {
      await picture().locator(`button[data-placement="${placement}"]`).click();
      await waitShownRun(page, runTimeout, 'tp=2', `placement=${placement}`);
      const comm = await page
        .locator('tp-timeline')
        .evaluate((el: Element & { timeline?: { events: { rank: number; kind: string; t0: number; t1: number }[] } }) =>
          (el.timeline?.events ?? [])
            .filter((e) => e.rank === 0 && e.kind === 'collective')
            .reduce((a, e) => a + e.t1 - e.t0, 0),
        );
      const exposed = Number(await page.locator('.totals strong[data-exposed-ms]').getAttribute('data-exposed-ms'));
      return { comm, exposed, caption: (await page.locator('tp-timeline .caption').textContent()) ?? '' };
    };
    const under = await timelineOf('tp-switch');
    const across = await timelineOf('tp-sockets');
    expect(under.comm).toBeGreaterThan(0);
    // 12 GB/s under one switch (PIX) against 7.6 / 4 GB/s across (four pairs share the socket link).
    expect(across.comm).toBeGreaterThan(under.comm);
    expect(across.exposed).toBeGreaterThan(under.exposed);
    expect(under.caption).toMatch(/TP ring on tp-switch: .*\(PIX\)/);
    expect(across.caption).toMatch(/TP ring on tp-sockets: .*\(SYS, link shared by 4\)/);
    // A reload of the link keeps the placement: its button pressed, the timeline priced under it.
    await page.reload();
    await waitShownRun(page, runTimeout, 'tp=2', 'placement=tp-sockets');
    expect(await picture().locator('button[data-placement="tp-sockets"]').getAttribute('aria-pressed')).toBe('true');
    expect(await page.locator('tp-timeline .caption').textContent()).toMatch(/TP ring on tp-sockets/);
    expect(Number(await page.locator('.totals strong[data-exposed-ms]').getAttribute('data-exposed-ms'))).toBe(
      across.exposed,
    );
  });

  test('summarizes a DGX cluster beyond two nodes and draws its network', async () => {
    await page.evaluate(() => {
      location.hash = '#tp=8&system=dgx-h100&dtype=bf16&gpus=32&placement=megatron';
    });
    await picture().locator('[data-placement-step="megatron"]').waitFor({ timeout: runTimeout });
    await expect
      .poll(() => picture().locator('svg[data-machine] [data-box="more-nodes"]').count(), { timeout: runTimeout })
      .toBe(1);
    expect(await picture().locator('svg[data-machine] [data-box="network"]').count()).toBe(1);
    expect(await picture().locator('svg[data-machine] [data-box="n0:nvswitch"]').count()).toBe(1);
  });
});
