// #view=classroom as a class sees it (Vite dev server, headless Chromium, real rank workers): a figure per step,
// presenter keys and the step in the hash, and the training demo. Screenshots at 1920×1080 and 1280×800 in test-results/.
import type { Page } from 'playwright';
import { expect, test } from 'vitest';
import { withPage } from '../../scripts/browser-run.ts';
import { configFromPreset } from '../../src/parallel/config.ts';
import { oracleTolerance } from '../../src/parallel/oracle.ts';
import type { TrainPoint } from '../../src/ranks/classroom-train-run.ts';

const shot = (page: Page, name: string) => page.screenshot({ path: `test-results/${name}.png` });
const stepId = (page: Page) => page.locator('tp-classroom section').getAttribute('data-step-id');
const firstStep = (page: Page) =>
  expect.poll(() => stepId(page).catch(() => null), { timeout: 120_000, interval: 250 }).not.toBeNull();
const hashStep = (page: Page) => page.evaluate(() => new URLSearchParams(location.hash.slice(1)).get('step'));

/** The blocks of the step's block figure(s): rank, rows, cols, label. */
const blocks = (page: Page) =>
  page.locator('tp-classroom tp-block-figure rect.block').evaluateAll((rs) =>
    rs.map((r) => ({
      rank: r.getAttribute('data-rank'),
      rows: Number(r.getAttribute('data-rows')),
      cols: Number(r.getAttribute('data-cols')),
      label: r.getAttribute('data-label'),
      fill: r.getAttribute('fill'),
    })),
  );
const texts = (page: Page, sel: string) => page.locator(sel).evaluateAll((ts) => ts.map((t) => t.textContent ?? ''));

/** Plays the ring of the `i`-th ring figure and waits until it has run every step; returns the chunks' contents after. */
async function playRing(page: Page, i: number): Promise<{ steps: number; chunks: (string | null)[][] }> {
  const fig = page.locator('tp-classroom tp-ring-figure').nth(i);
  const steps = Number(await fig.getAttribute('data-ring-steps'));
  await fig.locator('button.play').click();
  await expect.poll(() => fig.getAttribute('data-playing')).toBe('true');
  await expect.poll(() => fig.getAttribute('data-ring-step'), { timeout: 30_000 }).toBe(String(steps));
  await expect.poll(() => fig.getAttribute('data-playing')).toBe('false');
  const chunks = await fig
    .locator('rect.chunk')
    .evaluateAll((rs) =>
      rs.map((r) => [
        r.getAttribute('data-rank'),
        r.getAttribute('data-chunk'),
        r.getAttribute('data-from'),
        r.getAttribute('fill-opacity'),
      ]),
    );
  return { steps, chunks };
}

test('#view=classroom at t = 2: every step has its figure — rank-tinted blocks with their shapes, GEMMs with M, N, K, rings that play to the end, heads by rank — and body text is ≥ 24 px at 1920×1080', async () => {
  await withPage('/#view=classroom&tp=2', async (page, pageErrors) => {
    await page.setViewportSize({ width: 1920, height: 1080 });
    await firstStep(page);
    const t = 2;
    const fontPx = await page.locator('tp-classroom p.text').evaluate((p) => parseFloat(getComputedStyle(p).fontSize));
    expect(fontPx).toBeGreaterThanOrEqual(24);

    // 1: X on every rank, W₁ gate and up split by columns: 3 blocks per rank in the rank's colour.
    expect(await stepId(page)).toBe('split-w1');
    let b = await blocks(page);
    expect(b).toHaveLength(3 * t);
    for (let r = 0; r < t; r++) {
      const mine = b.filter((x) => x.rank === String(r));
      expect(mine.map((x) => [x.rows, x.cols])).toEqual([
        [8, 16],
        [16, 32 / t],
        [16, 32 / t],
      ]);
      expect(new Set(mine.map((x) => x.fill)).size).toBe(1);
    }
    expect(new Set(b.map((x) => x.fill)).size).toBe(t);
    expect(await texts(page, 'tp-classroom tp-block-figure text.dims')).toContain('[h, f/t] 16×16');
    await shot(page, 'classroom-1920-step1');

    // 2: X × W₁ᵢ → Yᵢ, M = s, N = f/t, K = h.
    await page.keyboard.press('ArrowRight');
    expect(await stepId(page)).toBe('local-y');
    expect(await blocks(page)).toHaveLength(3 * t);
    expect(await texts(page, 'tp-classroom text.mnk')).toEqual(Array(t).fill('M = 8, N = 16, K = 16'));
    await shot(page, 'classroom-1920-step2');

    // 3: SwiGLU, element-wise.
    await page.keyboard.press('ArrowRight');
    expect(await stepId(page)).toBe('swiglu');
    b = await blocks(page);
    expect(b.every((x) => x.rows === 8 && x.cols === 32 / t)).toBe(true);

    // 4: Aᵢ × W₂ᵢ → partial Zᵢ: K = f/t.
    await page.keyboard.press('ArrowRight');
    expect(await stepId(page)).toBe('partial-z');
    expect(await texts(page, 'tp-classroom text.mnk')).toEqual(Array(t).fill('M = 8, N = 16, K = 16'));
    expect((await blocks(page)).filter((x) => x.label?.startsWith('W₂')).map((x) => [x.rows, x.cols])).toEqual(
      Array(t).fill([16, 16]),
    );

    // 5: the all-reduce between the rank rows: payload and ring bytes, 2(t−1) steps, every chunk summed at the end.
    await page.keyboard.press('ArrowRight');
    expect(await stepId(page)).toBe('all-reduce');
    expect((await texts(page, 'tp-classroom tp-ring-figure text.bytes'))[0]).toMatch(
      /payload S = 512 B .* sends 2\(t−1\)\/t·S = 512 B/,
    );
    await shot(page, 'classroom-1920-step5-before');
    const ar = await playRing(page, 0);
    expect(ar.steps).toBe(2 * (t - 1));
    expect(ar.chunks).toHaveLength(t * t);
    expect(ar.chunks.every((c) => c[2] === '0,1')).toBe(true);
    await shot(page, 'classroom-1920-step5-after');
    expect(await page.locator('tp-classroom .check[data-pass="false"]').count()).toBe(0);
    expect(await page.locator('tp-classroom .check').count()).toBeGreaterThan(0);

    // 6: backward: dgrad GEMMs and f's all-reduce.
    await page.keyboard.press('ArrowRight');
    expect(await stepId(page)).toBe('backward');
    expect(await texts(page, 'tp-classroom text.mnk')).toEqual(Array(t).fill('M = 8, N = 16, K = 32'));
    expect(await page.locator('tp-classroom tp-ring-figure').count()).toBe(1);

    // 7: SP: [s/t, h] shards, then the all-gather and the reduce-scatter (rank r keeps chunk r only).
    await page.keyboard.press('ArrowRight');
    expect(await stepId(page)).toBe('sequence-parallel');
    b = await blocks(page);
    expect(b.map((x) => [x.rows, x.cols])).toEqual(Array(2 * t).fill([8 / t, 16]));
    const ag = await playRing(page, 0);
    expect(ag.steps).toBe(t - 1);
    expect(ag.chunks.map((c) => c[2])).toEqual(['0', '1', '0', '1']);
    const rs = await playRing(page, 1);
    expect(rs.chunks.filter((c) => c[3] !== '0.15').map((c) => [c[0], c[1], c[2]])).toEqual([
      ['0', '0', '0,1'],
      ['1', '1', '0,1'],
    ]);
    await shot(page, 'classroom-1920-step7');

    // 8: attention: q heads and KV groups in their rank's row.
    await page.keyboard.press('ArrowRight');
    expect(await stepId(page)).toBe('attention');
    const heads = await page
      .locator('tp-classroom tp-heads-figure rect.head')
      .evaluateAll((rs) => rs.map((r) => [r.getAttribute('data-head'), r.getAttribute('data-rank')]));
    expect(heads).toEqual([
      ['0', '0'],
      ['1', '0'],
      ['2', '1'],
      ['3', '1'],
    ]);
    expect(await page.locator('tp-classroom tp-heads-figure rect.kv').count()).toBe(2);
    await shot(page, 'classroom-1920-step8');

    // The numbers stay one switch away: heatmaps by default, the grids of numbers with "numbers".
    expect(await page.locator('tp-classroom tp-heatmap').count()).toBeGreaterThan(0);
    const cell = page.locator('tp-classroom tp-heatmap rect.cell').first();
    await cell.hover();
    expect(await page.locator('tp-classroom tp-heatmap .hover').first().textContent()).toMatch(/-?\d\.\d{3}/);
    await page.locator('tp-classroom input[data-control="numbers"]').check();
    expect(await page.locator('tp-classroom .grid span').count()).toBeGreaterThan(0);
    expect(await page.locator('tp-classroom tp-heatmap').count()).toBe(0);
    await page.locator('tp-classroom input[data-control="numbers"]').uncheck();

    await page.setViewportSize({ width: 1280, height: 800 });
    await page.keyboard.press('Home');
    await shot(page, 'classroom-1280-step1');
    await page.keyboard.press('End');
    expect(await stepId(page)).toBe('train');
    await shot(page, 'classroom-1280-train');
    expect(pageErrors).toEqual([]);
  });
}, 300_000);
