// In "this browser as the cluster" with chunked overlap, the timeline draws each kernel's extra time under a ring transfer.
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { waitShownRun } from './shown-run.ts';
import { type OpenPage } from '../../scripts/device/browser-run.ts';
import { openE2ePage } from './built-page.ts';

const runTimeout = 120_000;
let open: OpenPage;
let page: Page;

describe('kernels slowed by a ring transfer (built page)', () => {
  beforeAll(async () => {
    open = await openE2ePage('/#tpoverlap=chunks:2&sp=1&tp=2&machine=browser', {
      viewport: { width: 1280, height: 900 },
    });
    page = open.page;
  }, 180_000);
  afterAll(async () => {
    await open?.close();
  });

  test('#tpoverlap=chunks:2&sp=1&tp=2: slowed parts drawn on the compute lanes, in the legend, with both times on hover', async () => {
    await waitShownRun(page, runTimeout, 'tp=2', 'sp=1', 'tpoverlap=chunks:2', 'machine=browser');
    const slowed = page.locator('tp-timeline rect[data-kind="slowed"]');
    expect(await slowed.count()).toBeGreaterThan(0);
    // Each sits on a compute lane, inside the block of the kernel it slowed.
    expect(await page.locator('tp-timeline g[data-lane="comm"] rect[data-kind="slowed"]').count()).toBe(0);
    await expect.poll(() => page.locator('tp-timeline [data-legend="slowed"]').count()).toBe(1);
    expect(await page.locator('tp-timeline p.caption').first().textContent()).toMatch(/with the ring moving/);
    const widest = await slowed.evaluateAll((els) => {
      const w = els.map((e) => e.getBoundingClientRect().width);
      return w.indexOf(Math.max(...w));
    });
    await slowed.nth(widest).hover({ force: true });
    const tip = await page.locator('tp-timeline .tip').textContent();
    expect(tip).toMatch(/SLOWED BY A TRANSFER/);
    expect(tip).toMatch(/under a ring transfer: .*; alone .* \(×\d+\.\d\d/);
    expect(open.pageErrors).toEqual([]);
  });
});
