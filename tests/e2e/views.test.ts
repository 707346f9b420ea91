// #view=classroom and #view=gemm on the served page (Vite dev server, COOP/COEP), driven from Node with Playwright.
import type { Page } from 'playwright';
import { expect, test } from 'vitest';
import { configFromPreset } from '../../src/parallel/config.ts';
import { oracleTolerance } from '../../src/parallel/oracle.ts';
import { withE2ePage } from './built-page.ts';

const shot = (page: Page, name: string) => page.screenshot({ path: `test-results/${name}.png`, fullPage: true });
const stepId = (page: Page) => page.locator('tp-classroom section').getAttribute('data-step-id');
const panelValues = (page: Page, label: string): Promise<number[]> =>
  page
    .locator(`tp-classroom figure[data-label="${label}"] [data-value]`) // heatmap cells (or, with "numbers", the grid's)
    .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-value'))));

test('#view=classroom: the arrow keys step forward and back through every step, and step 5 shows Σ Zᵢ equal to the TP=1 result', async () => {
  await withE2ePage('/#view=classroom&tp=2', async (page, pageErrors) => {
    await page.setViewportSize({ width: 1920, height: 1080 });
    await expect.poll(() => stepId(page).catch(() => null), { timeout: 90_000 }).toBe('split-w1');
    const ids = [
      'split-w1',
      'local-y',
      'swiglu',
      'partial-z',
      'all-reduce',
      'backward',
      'sequence-parallel',
      'attention',
      'tp-overlap',
      'straggler',
    ];
    for (const id of ids.slice(1)) {
      await page.keyboard.press('ArrowRight');
      expect(await stepId(page)).toBe(id);
    }
    await shot(page, 'classroom-straggler');
    for (const id of ids.slice(0, -1).reverse()) {
      await page.keyboard.press('ArrowLeft');
      expect(await stepId(page)).toBe(id);
    }
    for (let i = 0; i < 4; i++) await page.keyboard.press('ArrowRight');
    expect(await stepId(page)).toBe('all-reduce');
    await shot(page, 'classroom-step5');
    const sum = await panelValues(page, 'Z = Σ Zᵢ (all-reduced)');
    const ref = await panelValues(page, 'Z at TP=1 (rank 0 alone)');
    const z0 = await panelValues(page, 'Z partial, rank 0');
    const z1 = await panelValues(page, 'Z partial, rank 1');
    expect(ref).toHaveLength(8 * 16);
    // The oracle's tolerance 16·ε·(K+1)·max|ref|, K = 32 (ffn): the same float32 products summed in another order.
    const tol = oracleTolerance(configFromPreset('classroom', { tp: 2 }), Math.max(...ref.map(Math.abs)));
    ref.forEach((r, i) => {
      expect(Math.abs(sum[i] - r)).toBeLessThanOrEqual(tol);
      expect(Math.abs(z0[i] + z1[i] - r)).toBeLessThanOrEqual(tol);
    });
    expect(await page.locator('tp-classroom .check[data-pass="false"]').count()).toBe(0);
    expect(pageErrors).toEqual([]);
  });
});

/** Runs #view=gemm at `hash` and checks N/t for column-parallel and K/t for row-parallel GEMMs, each with GFLOP/s; returns the degrees that ran. */
async function checkGemmView(hash: string, screenshot: string): Promise<number[]> {
  return withE2ePage(`/${hash}`, async (page, pageErrors) => {
    await page.setViewportSize({ width: 1920, height: 1080 });
    const cells = page.locator('tp-gemm-view td[data-t]');
    await expect.poll(() => cells.count(), { timeout: 170_000, interval: 500 }).toBeGreaterThan(0);
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
    const ran = [...new Set(rows.map((r) => r.t))].sort((a, b) => a - b);
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
    return ran;
  });
}

test('#view=gemm: for the default preset each legal t of 1, 2, 4, 8 lists column-parallel GEMMs with N/t and row-parallel ones with K/t, each with a GFLOP/s figure', async () => {
  // classroom has 4 heads, so t = 8 is listed as skipped with its reason
  expect(await checkGemmView('#view=gemm', 'gemm-view')).toEqual([1, 2, 4]);
}, 240_000);

test('#view=gemm with 8 heads runs every t of 1, 2, 4 and 8 with N/t and K/t and a GFLOP/s figure each', async () => {
  expect(await checkGemmView('#view=gemm&heads=8', 'gemm-view-8-heads')).toEqual([1, 2, 4, 8]);
}, 240_000);
