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
      /131,328 candidates in .* in a worker/,
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

  test("apply sets every flag the row names (FSDP, the distributed optimizer, the overlaps) and the cluster panel projects the row's step", async () => {
    // The seeds' tiny GPT × 12 layers on 8 V100s: the fastest row is DP 8 under Megatron-FSDP ZeRO-3 with both overlaps,
    // b 8 (the model's own), 48 ms (npm run project -- --search --layers 12).
    const first = advisor().locator('table[data-advisor-table] tbody tr').first();
    expect(await first.locator('td.flags').textContent()).toMatch(
      /--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather --use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params/,
    );
    // The previous test applied this row (its t = 1 and SP off were all it could check then).
    const rowStep = await first.locator('td:nth-child(5)').textContent();
    await expect
      .poll(() => page.evaluate(() => location.hash))
      .toMatch(/distopt=1&.*ogr=1&opg=1&fsdp=optim_grads_params/);
    for (const [control, on] of [
      ['ogr', true],
      ['opg', true],
    ] as const)
      expect(await page.locator(`tp-machine-controls [data-control="${control}"]`).isChecked()).toBe(on);
    expect(await page.locator('tp-machine-controls [data-control="fsdp"]').inputValue()).toBe('optim_grads_params');
    await expect
      .poll(() => cluster().locator('[data-cluster-flags]').textContent(), { timeout: runTimeout })
      .toMatch(/--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather M-FSDP optim_grads_params/);
    // The panel's t = 1 row without SP is the applied layout: the same step as the advisor's row.
    await expect
      .poll(() => cluster().locator('tr[data-tp="1"][data-sp="false"] td:nth-child(4)').textContent(), {
        timeout: runTimeout,
      })
      .toBe(rowStep);
    await expect.poll(() => first.locator('button[data-apply]').textContent()).toMatch(/on the page/);
    // Megatron's rule at its control: the parameter gather without --overlap-grad-reduce is refused there.
    await page.locator('tp-machine-controls [data-control="fsdp"]').selectOption('off');
    await page.locator('tp-machine-controls [data-control="ogr"]').uncheck();
    await expect
      .poll(() => page.locator('tp-machine-controls [data-error-for="ogr"]').textContent())
      .toMatch(/--overlap-param-gather needs --overlap-grad-reduce/);
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
    // Whole-iteration graphs are written with the flag Megatron requires beside them (arguments.py:1195-1197).
    await page.locator('tp-machine-controls [data-control="graphs"]').selectOption('full_iteration');
    await expect.poll(() => page.evaluate(() => location.hash)).toContain('graphs=full_iteration');
    await advisor().locator('button[data-advisor-search]').click();
    await expect
      .poll(() => advisor().locator('[data-advisor-kernels]').textContent(), { timeout: runTimeout, interval: 250 })
      .toMatch(/--cuda-graph-impl full_iteration --no-check-for-nan-in-loss-and-grad/);
    expect(open.pageErrors).toEqual([]);
  });
});
