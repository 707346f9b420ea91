// #view=gemm on the served page (built once, COOP/COEP), driven from Node with Playwright: the local GEMMs of every
// legal t with their shapes and GFLOP/s. (The classroom's steps and keys: classroom.test.ts.)
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { OpenPage } from '../../scripts/device/browser-run.ts';
import { openE2ePage } from './built-page.ts';

const shot = (page: Page, name: string) => page.screenshot({ path: `test-results/${name}.png`, fullPage: true });

/**
 * Waits until #view=gemm on `page` shows the degrees `ran` (the sweep's table replaces the last one
 * whole when it is done), then checks N/t for column-parallel and K/t for row-parallel GEMMs, each
 * with GFLOP/s, and that every t of 1, 2, 4, 8 either ran or is listed as skipped with its reason.
 */
async function checkGemmView(page: Page, pageErrors: string[], ran: number[], screenshot: string): Promise<void> {
  const cells = page.locator('tp-gemm-view td[data-t]');
  const degrees = async () =>
    [...new Set(await cells.evaluateAll((tds) => tds.map((td) => Number((td as HTMLElement).dataset.t))))].sort(
      (a, b) => a - b,
    );
  await expect.poll(degrees, { timeout: 170_000, interval: 500 }).toEqual(ran);
  await page.waitForTimeout(300); // let the charts draw before the screenshot (nothing is asserted on time)
  await shot(page, screenshot);
  const rows = await cells.evaluateAll((tds) =>
    tds.map((td) => {
      const d = (td as HTMLElement).dataset;
      return {
        gemm: d.gemm!,
        t: Number(d.t),
        M: Number(d.m),
        N: Number(d.n),
        K: Number(d.k),
        gflops: Number(d.gflops),
      };
    }),
  );
  const skipped = await page
    .locator('tp-gemm-view [data-skipped-t]')
    .evaluateAll((ps) => ps.map((p) => [Number(p.getAttribute('data-skipped-t')), p.textContent ?? '']));
  expect([...new Set(rows.map((r) => r.t))].sort((a, b) => a - b)).toEqual(ran);
  expect([...ran, ...skipped.map(([t]) => t)].sort()).toEqual([1, 2, 4, 8]);
  skipped.forEach(([, why]) => expect(why).toMatch(/must be divisible|must divide|legal/));
  const at = (g: string, t: number) => rows.find((r) => r.gemm === g && r.t === t)!;
  for (const t of ran) {
    for (const g of ['mlp.gate', 'mlp.up'])
      expect([at(g, t).M, at(g, t).N * t, at(g, t).K], `${g} t=${t}`).toEqual([at(g, 1).M, at(g, 1).N, at(g, 1).K]);
    // linear_qkv: Q, K, V GEMMs while the preset's 2 KV groups ≥ t; with groups < t one GEMM over an
    // even slice of W = (heads + 2·groups)·d columns (Megatron-Core), W being the three N at t = 1.
    const W = ['qkv.q', 'qkv.k', 'qkv.v'].reduce((a, g) => a + at(g, 1).N, 0);
    const qkv = t > 2 ? at('qkv', t) : at('qkv.q', t);
    expect([qkv.M, qkv.N * t, qkv.K], `linear_qkv t=${t}`).toEqual([
      at('qkv.q', 1).M,
      t > 2 ? W : at('qkv.q', 1).N,
      at('qkv.q', 1).K,
    ]);
    for (const g of ['attn.proj', 'mlp.down'])
      expect([at(g, t).M, at(g, t).N, at(g, t).K * t], `${g} t=${t}`).toEqual([at(g, 1).M, at(g, 1).N, at(g, 1).K]);
    rows.filter((r) => r.t === t).forEach((r) => expect(r.gflops, `${r.gemm} t=${t}`).toBeGreaterThan(0));
  }
  expect(pageErrors).toEqual([]);
}

// One page: 8 heads first (every t runs), then the default preset's 4 heads by the hash (t = 8 skipped),
// whose GEMMs are the same shapes at t = 1, 2, 4 — a second page would only pay the page load, the
// rank workers' start and the tuning again.
describe('#view=gemm (built page)', () => {
  let open: OpenPage;
  beforeAll(async () => {
    open = await openE2ePage('/#view=gemm&heads=8', { viewport: { width: 1920, height: 1080 } });
  }, 180_000);
  afterAll(async () => {
    await open?.close();
  });

  test('with 8 heads it runs every t of 1, 2, 4 and 8 with N/t and K/t and a GFLOP/s figure each', async () => {
    await checkGemmView(open.page, open.pageErrors, [1, 2, 4, 8], 'gemm-view-8-heads');
  }, 240_000);

  test('for the default preset each legal t of 1, 2, 4, 8 lists column-parallel GEMMs with N/t and row-parallel ones with K/t, each with a GFLOP/s figure', async () => {
    // classroom has 4 heads, so t = 8 is listed as skipped with its reason
    await open.page.evaluate(() => (location.hash = '#view=gemm'));
    await checkGemmView(open.page, open.pageErrors, [1, 2, 4], 'gemm-view');
  }, 240_000);
});
