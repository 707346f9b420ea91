// #slow=r:f on the built page: the straggler named in the run totals and the timeline, the waits
// drawn on the other ranks; a bad value named under its control.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type OpenPage } from '../../scripts/device/browser-run.ts';
import { openE2ePage } from './built-page.ts';

let open: OpenPage;
beforeAll(async () => {
  open = await openE2ePage('about:blank'); // the browser and server only: every test opens its own page
}, 180_000);
afterAll(async () => {
  await open?.close();
});

/** A fresh page at `hash`. */
async function pageAt(hash: string) {
  const page = await open.page
    .context()
    .browser()!
    .newPage({ viewport: { width: 1280, height: 800 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${open.base}${hash}`);
  return { page, errors };
}

test('#slow=2:3&tp=4 names rank 2 the straggler; ranks 0, 1 and 3 wait inside its collectives', async () => {
  const { page, errors } = await pageAt('#slow=2:3&tp=4');
  try {
    const totals = page.locator('[data-shown-tp]');
    await expect.poll(() => totals.textContent(), { timeout: 60_000 }).toBe('4');
    const named = page.locator('.totals strong[data-straggler]');
    await expect.poll(() => named.getAttribute('data-straggler'), { timeout: 60_000 }).toBe('2');
    const head = page.locator('tp-timeline p[data-straggler]');
    expect(await head.getAttribute('data-straggler')).toBe('2');
    expect(await head.textContent()).toMatch(
      /^Straggler: rank 2 entered \d+ of \d+ collectives last; ranks 0, 1 and 3 each waited .* inside them: their long collectives are waiting for rank 2, not slow\.$/,
    );
    for (const r of [0, 1, 3])
      expect(await page.locator(`tp-timeline rect[data-kind="wait"][data-rank="${r}"]`).count()).toBeGreaterThan(0);
    expect(await page.locator('tp-timeline rect[data-kind="wait"][data-rank="2"]').count()).toBe(0);
    const stragglers = await page
      .locator('tp-timeline rect[data-kind="wait"]')
      .evaluateAll((els) => [...new Set(els.map((e) => e.getAttribute('data-straggler')))]);
    expect(stragglers).toEqual(['2']);
    expect(await page.locator('tp-machine-controls input[data-control="slow"]').inputValue()).toBe('2:3');
    await page.screenshot({ path: 'test-results/straggler.png', fullPage: true });
    // The control turns it off (the link loses the key; the re-run waits for the rank workers' run in flight).
    await page.locator('tp-machine-controls input[data-control="slow"]').fill('off');
    await page.locator('tp-machine-controls input[data-control="slow"]').dispatchEvent('change');
    await expect.poll(() => page.evaluate(() => location.hash), { timeout: 10_000 }).not.toContain('slow');
    expect(errors).toEqual([]);
  } finally {
    await page.close();
  }
}, 240_000);

test('without #slow, equal ranks: no straggler named, no waits drawn', async () => {
  const { page, errors } = await pageAt('#tp=4');
  try {
    await expect.poll(() => page.locator('[data-shown-tp]').textContent(), { timeout: 60_000 }).toBe('4');
    await expect
      .poll(() => page.locator('tp-timeline rect[data-kind="comm"]').count(), { timeout: 60_000 })
      .toBeGreaterThan(0);
    expect(await page.locator('.totals strong[data-straggler]').count()).toBe(0);
    expect(await page.locator('tp-timeline p[data-straggler]').count()).toBe(0);
    expect(await page.locator('tp-timeline rect[data-kind="wait"]').count()).toBe(0);
    expect(errors).toEqual([]);
  } finally {
    await page.close();
  }
}, 120_000);

test('#slow with a rank outside t, or a factor below 1, is named under the control', async () => {
  for (const [hash, says] of [
    ['#tp=2&slow=3:2', /slow=3:2 names rank 3, but t = 2 has ranks 0–1; pick one of them or set slow=off\./],
    ['#tp=2&slow=1:0', /slow: the factor "0" must be a whole number from 1 to 16 .* Using slow=off\./],
  ] as const) {
    const { page, errors } = await pageAt(hash);
    try {
      const msg = page.locator('tp-machine-controls [data-error-for="slow"]');
      await expect.poll(() => msg.count(), { timeout: 30_000 }).toBeGreaterThan(0);
      expect(await msg.first().textContent()).toMatch(says);
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  }
}, 120_000);
