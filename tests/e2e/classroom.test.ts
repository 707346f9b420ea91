// #view=classroom as a class sees it (Vite dev server, headless Chromium, real rank workers): a figure per step,
// presenter keys and the step in the hash, and the training demo. Screenshots at 1920×1080 and 1280×800 in test-results/.
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { OpenPage } from '../../scripts/device/browser-run.ts';
import { configFromPreset } from '../../src/parallel/config.ts';
import { oracleTolerance } from '../../src/parallel/oracle.ts';
import type { TrainPoint } from '../../src/session/classroom-train-run.ts';
import { openE2ePage, withE2ePage } from './built-page.ts';

const shot = (page: Page, name: string) => page.screenshot({ path: `test-results/${name}.png` });
const stepId = (page: Page) => page.locator('tp-classroom section').getAttribute('data-step-id');
const firstStep = (page: Page) =>
  expect.poll(() => stepId(page).catch(() => null), { timeout: 120_000, interval: 250 }).not.toBeNull();
/** The values of the step's panel labelled `label` (heatmap cells, or with "numbers" the grid's). */
const panelValues = (page: Page, label: string): Promise<number[]> =>
  page
    .locator(`tp-classroom figure[data-label="${label}"] [data-value]`)
    .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-value'))));
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

test('#view=classroom at t = 2: every step has its figure — rank-tinted blocks with their shapes, GEMMs with M, N, K, rings that play to the end, heads by rank, Σ Zᵢ equal to the TP=1 result — the arrow keys step forward and back through every step, and body text is ≥ 24 px at 1920×1080', async () => {
  await withE2ePage('/#view=classroom&tp=2', async (page, pageErrors) => {
    await page.setViewportSize({ width: 1920, height: 1080 });
    await firstStep(page);
    // The page left its layer run for the timeline: the classroom had the rank workers to itself.
    const badge = page.locator('tp-oracle-badge .badge');
    expect(await badge.getAttribute('data-pass')).toBe('none');
    expect(await badge.textContent()).toMatch(/the layer runs against TP=1 when the timeline is shown/);
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
    // Σ Zᵢ equals the TP = 1 result within the oracle's tolerance 16·ε·(K+1)·max|ref|, K = 32 (ffn):
    // the same float32 products summed in another order.
    const sum = await panelValues(page, 'Z = Σ Zᵢ (all-reduced)');
    const ref = await panelValues(page, 'Z at TP=1 (rank 0 alone)');
    const z0 = await panelValues(page, 'Z partial, rank 0');
    const z1 = await panelValues(page, 'Z partial, rank 1');
    expect(ref).toHaveLength(8 * 16);
    const tol = oracleTolerance(configFromPreset('classroom', { tp: 2 }), Math.max(...ref.map(Math.abs)));
    ref.forEach((r, i) => {
      expect(Math.abs(sum[i] - r)).toBeLessThanOrEqual(tol);
      expect(Math.abs(z0[i] + z1[i] - r)).toBeLessThanOrEqual(tol);
    });
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

    // The arrow keys go on to the last steps and back through every one.
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
    for (const id of ids.slice(8)) {
      await page.keyboard.press('ArrowRight');
      expect(await stepId(page)).toBe(id);
    }
    await shot(page, 'classroom-1920-straggler');
    for (const id of ids.slice(0, -1).reverse()) {
      await page.keyboard.press('ArrowLeft');
      expect(await stepId(page)).toBe(id);
    }

    await page.setViewportSize({ width: 1280, height: 800 });
    await page.keyboard.press('Home');
    await shot(page, 'classroom-1280-step1');
    await page.keyboard.press('End');
    expect(await stepId(page)).toBe('train');
    await shot(page, 'classroom-1280-train');
    // Back on the timeline, the deferred layer run starts and its oracle comes in.
    await page.locator('nav[aria-label="views"] a', { hasText: /timeline/i }).click();
    await expect.poll(() => badge.getAttribute('data-pass'), { timeout: 180_000, interval: 500 }).toBe('true');
    expect(pageErrors).toEqual([]);
  });
}, 480_000);

// One page for the rest, as a presenter walks it: opened by the link to step 5, then steps 9, 10 and
// 11 in turn, each test starting where the one before left the page (a fresh page per test paid the
// page load and the classroom's first run on new rank workers four times over).
describe('one classroom page at t = 2, from the link to step 5 on through steps 9, 10 and 11', () => {
  let open: OpenPage;
  let page: Page;
  let pageErrors: string[];
  beforeAll(async () => {
    open = await openE2ePage('/#view=classroom&tp=2&step=5', { viewport: { width: 1920, height: 1080 } });
    ({ page, pageErrors } = open);
  }, 180_000);
  afterAll(async () => {
    await open?.close();
  });

  test('presenter mode: #view=classroom&step=5 opens step 5; End, Home, space and the outline move and write the step into the hash; F fills the screen with ≥ 24 px text', async () => {
    await firstStep(page);
    expect(await stepId(page)).toBe('all-reduce');
    await page.keyboard.press('End');
    expect(await stepId(page)).toBe('train');
    await expect.poll(() => hashStep(page)).toBe('11');
    await page.keyboard.press('Home');
    expect(await stepId(page)).toBe('split-w1');
    await expect.poll(() => hashStep(page)).toBe(null); // step 1 is the default: links leave it out
    await page.keyboard.press(' ');
    expect(await stepId(page)).toBe('local-y');
    await page.keyboard.press('PageDown');
    await page.keyboard.press('ArrowDown');
    expect(await stepId(page)).toBe('partial-z');
    await page.keyboard.press('PageUp');
    expect(await stepId(page)).toBe('swiglu');
    await page.locator('tp-classroom nav.outline button[data-step="6"]').click();
    expect(await stepId(page)).toBe('sequence-parallel');
    await expect.poll(() => hashStep(page)).toBe('7');
    // A reload of the link opens the same slide.
    await page.reload();
    await firstStep(page);
    expect(await stepId(page)).toBe('sequence-parallel');

    await page.keyboard.press('f');
    await expect.poll(() => page.locator('tp-classroom').getAttribute('presenter')).toBe('');
    const box = await page.locator('tp-classroom').boundingBox();
    expect([box?.x, box?.y, box?.width, box?.height]).toEqual([0, 0, 1920, 1080]);
    const body = await page.locator('tp-classroom p.text').evaluate((p) => parseFloat(getComputedStyle(p).fontSize));
    expect(body).toBeGreaterThanOrEqual(24);
    await page.keyboard.press('ArrowLeft');
    expect(await stepId(page)).toBe('backward');
    await shot(page, 'classroom-1920-presenter-step6');
    await page.keyboard.press('ArrowRight');
    await shot(page, 'classroom-1920-presenter-step7');
    await page.keyboard.press('F');
    await expect.poll(() => page.locator('tp-classroom').getAttribute('presenter')).toBe(null);
    expect(pageErrors).toEqual([]);
  }, 300_000);

  test('step 9, chunked overlap at t = 2: the ring-order chunk schedules of the column/row pair, and the layer run with SP and 2 chunks on the ranks — its timeline has the chunked GEMMs and collectives, and it passes the oracle', async () => {
    await page.setViewportSize({ width: 1920, height: 1080 });
    await page.locator('tp-classroom nav.outline button[data-step="8"]').click();
    expect(await stepId(page)).toBe('tp-overlap');
    await expect.poll(() => hashStep(page)).toBe('9');
    const fig = page.locator('tp-classroom tp-chunk-figure');
    // 2 ranks × 2 stages in each grid; rank 1's first all-gather stage multiplies its own chunk 1 while sending it.
    expect(await fig.locator('table[data-pattern="gather-gemm"] td').count()).toBe(4);
    expect(await fig.locator('table[data-pattern="gemm-reduce-scatter"] td').count()).toBe(4);
    const stage1 = fig.locator('table[data-pattern="gather-gemm"] td[data-rank="1"][data-stage="0"]');
    expect(await stage1.locator('.gemm').getAttribute('data-chunk')).toBe('1');
    expect(await stage1.locator('.piece[data-dir="send"]').getAttribute('data-chunk')).toBe('1');
    expect(await stage1.locator('.piece[data-dir="recv"]').getAttribute('data-chunk')).toBe('0');
    const el = page.locator('tp-classroom tp-classroom-run');
    await expect.poll(() => el.getAttribute('data-state'), { timeout: 240_000, interval: 500 }).toBe('done');
    expect(await el.getAttribute('data-oracle')).toBe('pass');
    const ops = await el
      .locator('tp-timeline rect[data-kind]')
      .evaluateAll((rs) => rs.map((r) => [r.getAttribute('data-kind'), r.getAttribute('data-op')]));
    expect(ops.some(([k, op]) => k === 'compute' && /\[2\/2\]/.test(op ?? ''))).toBe(true);
    // c = t = 2: one ring exchange per collective (ln2.gather[2/2] brings the other shard,
    // mlp.reduce[1/2] sends the other rank's partial), two GEMM chunks (mlp.up[2/2], …).
    expect(ops.some(([k, op]) => k === 'comm' && op === 'ln2.gather[2/2]')).toBe(true);
    expect(ops.some(([k, op]) => k === 'comm' && op === 'mlp.reduce[1/2]')).toBe(true);
    await shot(page, 'classroom-1920-step9-overlap');
    await page.setViewportSize({ width: 1280, height: 800 });
    await shot(page, 'classroom-1280-step9-overlap');
    expect(pageErrors).toEqual([]);
  }, 300_000);

  test('step 10, a straggler at t = 2: the layer runs again with rank 1 dispatching each kernel 3×, the timeline hatches rank 0 waiting inside the collectives, and the analysis names rank 1: the verdict and most collectives', async () => {
    await page.setViewportSize({ width: 1920, height: 1080 });
    await page.keyboard.press('ArrowRight');
    expect(await stepId(page)).toBe('straggler');
    const el = page.locator('tp-classroom tp-classroom-run');
    await expect.poll(() => el.getAttribute('data-state'), { timeout: 240_000, interval: 500 }).toBe('done');
    expect(await el.getAttribute('data-straggler')).toBe('1');
    const waits = await el
      .locator('tp-timeline rect[data-kind="wait"]')
      .evaluateAll((rs) => rs.map((r) => [r.getAttribute('data-rank'), r.getAttribute('data-straggler')]));
    // The classroom's kernels take microseconds and each rank's are timed alone on this shared
    // machine, so a single call between two close collectives can go either way; the verdict over
    // the step, and most calls, name rank 1.
    const byRank1 = waits.filter(([rank, by]) => rank === '0' && by === '1').length;
    expect(byRank1).toBeGreaterThan(waits.length / 2);
    expect(await el.locator('tp-timeline p[data-straggler]').textContent()).toMatch(/Straggler: rank 1 entered/);
    const calls = await el.locator('li[data-op]').evaluateAll((ls) => ls.map((l) => l.getAttribute('data-straggler')));
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.filter((s) => s === '1').length).toBeGreaterThan(calls.length / 2);
    await shot(page, 'classroom-1920-step10-straggler');
    await page.setViewportSize({ width: 1280, height: 800 });
    await shot(page, 'classroom-1280-step10-straggler');
    expect(pageErrors).toEqual([]);
  }, 300_000);

  /** Sets the training slide's switches, trains K steps and returns the points. */
  async function train(page: Page, k: number, sp: boolean, skipnorm: boolean): Promise<TrainPoint[]> {
    const el = page.locator('tp-classroom tp-classroom-train');
    await el.locator('input[data-control="steps"]').fill(String(k));
    await el.locator('input[data-control="steps"]').dispatchEvent('change');
    await el.locator('input[data-control="sp"]').setChecked(sp);
    await el.locator('input[data-control="skipnorm"]').setChecked(skipnorm);
    await el.locator('button#train').click();
    await expect.poll(() => el.getAttribute('data-state')).toBe('running');
    await expect.poll(() => el.getAttribute('data-state'), { timeout: 240_000, interval: 500 }).toBe('done');
    return el.evaluate((e) => [...(e as unknown as { points: TrainPoint[] }).points]);
  }

  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

  test('training demo at t = 2: 20 Adam steps lower the loss, the TP = 2 and TP = 1 curves agree to float32 rounding, and with SP + skipnorm the norm gains drift apart more each step; Cancel stops a run', async () => {
    await page.setViewportSize({ width: 1920, height: 1080 });
    await page.keyboard.press('ArrowRight');
    expect(await stepId(page)).toBe('train');
    const p = await train(page, 20, false, false);
    expect(p).toHaveLength(20);
    const losses = p.map((q) => q.loss);
    console.log(`t = 2 loss: ${losses[0].toFixed(4)} → ${losses[19].toFixed(4)}`);
    expect(mean(losses.slice(-5))).toBeLessThan(mean(losses.slice(0, 5)) - 0.2);
    // The oracle's tolerance 16·ε·(K+1)·max|loss| with K = 32: the same float32 products summed in
    // other orders; Adam's update (≈ lr·sign of the moment) does not amplify the rounding.
    const tol = oracleTolerance(configFromPreset('classroom', { tp: 2, b: 4 }), Math.max(...p.map((q) => q.lossRef)));
    const diff = Math.max(...p.map((q) => Math.abs(q.loss - q.lossRef)));
    console.log(`max |loss(t=2) − loss(t=1)| = ${diff.toExponential(2)} (tolerance ${tol.toExponential(2)})`);
    expect(diff).toBeLessThanOrEqual(tol);
    expect(p.every((q) => q.spread === 0)).toBe(true); // the norm-gradient all-reduce keeps the copies equal
    expect(await page.locator('tp-classroom tp-train-chart [data-series="TP = 2"] path').count()).toBe(1);
    await shot(page, 'classroom-1920-train');

    const d = await train(page, 20, true, true);
    const spread = d.map((q) => q.spread);
    console.log(
      `SP + skipnorm spread: step 1 ${spread[0].toExponential(2)}, step 10 ${spread[9].toExponential(2)}, step 20 ${spread[19].toExponential(2)}`,
    );
    expect(spread[0]).toBeGreaterThan(0);
    expect(spread[9]).toBeGreaterThan(spread[0]);
    expect(spread[19]).toBeGreaterThan(spread[9]);
    await shot(page, 'classroom-1920-train-skipnorm');

    const el = page.locator('tp-classroom tp-classroom-train');
    await el.locator('input[data-control="steps"]').fill('400');
    await el.locator('input[data-control="steps"]').dispatchEvent('change');
    await el.locator('button#train').click();
    await expect
      .poll(async () => Number(await el.getAttribute('data-steps-done')), { timeout: 60_000 })
      .toBeGreaterThan(1);
    await el.locator('button#cancel').click();
    await expect.poll(() => el.getAttribute('data-state'), { timeout: 30_000 }).toBe('cancelled');
    expect(Number(await el.getAttribute('data-steps-done'))).toBeLessThan(400);
    expect(await el.locator('.status').textContent()).toMatch(/cancelled after \d+ of 400 steps/);
    await page.setViewportSize({ width: 1280, height: 800 });
    await shot(page, 'classroom-1280-train-cancelled');
    expect(pageErrors).toEqual([]);
  }, 400_000);
});
