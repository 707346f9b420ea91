// The machine picture end to end: the seeds' V100 box under both placements, the step following; a DGX cluster summarized.
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type OpenPage } from '../../scripts/browser-run.ts';
import { openE2ePage } from './built-page.ts';

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
