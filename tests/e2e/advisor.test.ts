// The cluster panel's default model and the advisor panel end to end: the production build, driven through its controls.
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { waitShownRun } from './shown-run.ts';
import { type OpenPage } from '../../scripts/device/browser-run.ts';
import { openE2ePage } from './built-page.ts';

const runTimeout = 90_000;
let open: OpenPage;
let page: Page;

/** Waits until the page shows a finished run whose hash has every `key=value` of `parts`. */
const shownRun = (...parts: string[]): Promise<void> => waitShownRun(page, runTimeout, ...parts);

const cluster = () => page.locator('tp-cluster-panel');
const advisor = () => page.locator('tp-advisor-panel');
const mfuOf = async (tp: number): Promise<number> =>
  Number.parseFloat(
    (await cluster().locator(`tr[data-tp="${tp}"][data-sp="false"] td:nth-child(7)`).textContent()) ?? '',
  );

describe('the cluster model and the advisor (built page)', () => {
  beforeAll(async () => {
    open = await openE2ePage('/#tp=2', { viewport: { width: 1280, height: 800 } });
    page = open.page;
  }, 180_000);
  afterAll(async () => {
    await open?.close();
  });

  test("the cluster panel projects the seeds' tiny GPT by default, the page's layer one click away", async () => {
    await shownRun('tp=2');
    await expect
      .poll(() => cluster().locator('[data-cluster-model]').getAttribute('data-cluster-model'))
      .toBe('seeds-v100');
    await expect.poll(() => cluster().locator('tr[data-tp="8"][data-sp="false"] td[data-tokens]').count()).toBe(1);
    // The seeds' tiny GPT on their V100 box is a real load: t = 1 reaches a two-digit MFU (the projection gives 17.7%).
    expect(await mfuOf(1)).toBeGreaterThan(5);
    await cluster().locator('button[data-cluster-model-switch="layer"]').click();
    await expect.poll(() => page.evaluate(() => location.hash)).toContain('cmodel=layer');
    await expect.poll(() => cluster().locator('[data-cluster-model]').getAttribute('data-cluster-model')).toBe('layer');
    // The classroom layer: 4 heads, t = 8 illegal; its MFU is the 0.0% a newcomer used to see first.
    await expect.poll(() => cluster().locator('tr[data-tp="8"][data-sp="false"]').textContent()).toMatch(/heads|divis/);
    expect(await mfuOf(1)).toBeLessThan(1);
    await cluster().locator('button[data-cluster-model-switch="seeds-v100"]').click();
    await expect.poll(() => page.evaluate(() => location.hash)).not.toContain('cmodel=');
  });

  test('the advisor searches in a worker with progress, counts rejections, and a row applies its t and SP', async () => {
    await advisor().locator('button[data-advisor-search]').click();
    await expect.poll(() => advisor().locator('[data-advisor-progress] progress').count()).toBe(1);
    const rows = advisor().locator('table[data-advisor-table] tbody tr');
    await expect.poll(() => rows.count(), { timeout: runTimeout, interval: 250 }).toBe(10);
    expect(await advisor().locator('[data-advisor-summary]').textContent()).toMatch(
      /55,296 candidates in .* in a worker/,
    );
    expect(await advisor().locator('[data-advisor-rejected] li[data-reason="gpus"]').textContent()).toMatch(
      /^[\d,]+ × gpus/,
    );
    // The fastest layout of the seeds' tiny GPT on 8 V100s: pure DP (t = 1), no SP.
    const first = rows.first();
    expect(await first.getAttribute('data-tp')).toBe('1');
    expect(await first.locator('td.flags').textContent()).toMatch(
      /--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1/,
    );
    await first.locator('button[data-apply]').click();
    await expect.poll(() => page.evaluate(() => location.hash)).toMatch(/tp=1&sp=0/);
    await shownRun('tp=1', 'sp=0');
    await expect.poll(() => first.locator('button[data-apply]').textContent()).toMatch(/on the page/);
  });

  test('a pipelined row applies p and v: the hash and the pipeline view follow; the tooltip names what the page cannot set', async () => {
    // The seeds' tiny GPT × 12 layers: rows 9 and 10 pipeline over p = 2 stages × v = 2 (npm run project -- --search --layers 12).
    const piped = advisor().locator('table[data-advisor-table] tbody tr:not([data-pp="1"])').first();
    expect(await piped.getAttribute('data-pp')).toBe('2');
    expect(await piped.getAttribute('data-vpp')).toBe('2');
    const button = piped.locator('button[data-apply]');
    expect(await button.getAttribute('title')).toMatch(
      /Not set \(the page has no setting\): .*--use-distributed-optimizer/,
    );
    await button.click();
    await expect.poll(() => page.evaluate(() => location.hash)).toMatch(/pp=2&vpp=2/);
    await shownRun('tp=1', 'sp=0');
    const view = cluster().locator('tp-pipeline-view');
    await expect.poll(() => view.locator('g[data-stage="1"]').count(), { timeout: runTimeout }).toBe(1);
    expect(await view.locator('g[data-stage="2"]').count()).toBe(0);
    expect(await view.locator('rect[data-pass="forward"][data-chunk="1"]').count()).toBeGreaterThan(0);
    await expect.poll(() => button.textContent()).toMatch(/on the page/);
  });

  test('a kernel switch reaches the search: --arch gpt is in the caption and changes the result', async () => {
    const rows = advisor().locator('table[data-advisor-table] tbody tr');
    const llama = await rows.first().locator('td:nth-child(5)').textContent();
    expect(await advisor().locator('[data-advisor-kernels]').textContent()).toMatch(/--arch llama/);
    await page.locator('tp-machine-controls [data-control="layerArch"]').selectOption('gpt');
    await expect.poll(() => page.evaluate(() => location.hash)).toContain('arch=gpt');
    await advisor().locator('button[data-advisor-search]').click();
    await expect
      .poll(() => advisor().locator('[data-advisor-kernels]').textContent(), { timeout: runTimeout, interval: 250 })
      .toMatch(/--arch gpt/);
    await expect.poll(() => rows.count()).toBe(10);
    // The GeLU MLP has one up-projection instead of gate and up: another step time.
    expect(await rows.first().locator('td:nth-child(5)').textContent()).not.toBe(llama);
    expect(open.pageErrors).toEqual([]);
  });
});
