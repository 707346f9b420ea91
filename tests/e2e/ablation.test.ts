// The overlap ablation panel end to end: the production build, driven through its controls (the worker included).
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type OpenPage } from '../../scripts/device/browser-run.ts';
import { openE2ePage } from './built-page.ts';

let open: OpenPage;
let page: Page;
const panel = () => page.locator('tp-ablation-panel');
const stepOf = async (combination: string): Promise<number> =>
  Number(await panel().locator(`tr[data-combination="${combination}"]`).getAttribute('data-step-ms'));

describe('the overlap ablation panel (built page)', () => {
  beforeAll(async () => {
    open = await openE2ePage('/#tp=4&sp=1', { viewport: { width: 1280, height: 800 } });
    page = open.page;
  }, 180_000);
  afterAll(async () => {
    await open?.close();
  });

  test("ablates the page's t 4 with SP: the flags that cannot apply say why, TP chunks hide TP communication, p2p stays on at p 2 × v 2", async () => {
    await panel().locator('button[data-ablation-run]').click({ timeout: 90_000 });
    await expect
      .poll(() => panel().locator('table[data-ablation-table] tbody tr').count(), { timeout: 90_000 })
      .toBeGreaterThan(3);
    // The seeds' tiny GPT on their 8 GPUs at t 4, p 1: DP 2, so the DP overlaps apply; p2p needs the interleaved schedule.
    expect(await panel().locator('li[data-flag="overlapP2p"][data-not-applicable]').textContent()).toContain(
      'interleaved',
    );
    const none = await stepOf('none');
    expect(none).toBeGreaterThan(0);
    const exposedTp = async (c: string) =>
      (await panel().locator(`tr[data-combination="${c}"] td[data-exposed-tp]`).textContent()) ?? '';
    expect(await exposedTp('tpCommOverlap')).not.toBe(await exposedTp('none'));
    expect(await stepOf('tpCommOverlap')).toBeLessThan(none);
    // Userbuffers: the TP-chunks row holds memory, the baseline none.
    expect(
      Number(
        await panel().locator('tr[data-combination="tpCommOverlap"] td[data-in-flight]').getAttribute('data-in-flight'),
      ),
    ).toBeGreaterThan(0);
    expect(
      Number(await panel().locator('tr[data-combination="none"] td[data-in-flight]').getAttribute('data-in-flight')),
    ).toBe(0);
    // Megatron refuses --overlap-param-gather without --overlap-grad-reduce: that row is listed, not projected.
    expect(
      await panel().locator('tr[data-combination="overlapParamGather"][data-launched="false"]').textContent(),
    ).toContain('--overlap-grad-reduce');

    // p 2 × v 2 (the page's 12 layers): DP 1; Megatron requires the p2p overlap with the interleaved
    // schedule at p = 2 (arguments.py:972-975), so it is on in every row and listed as not ablatable.
    await panel().locator('input[data-ablation-pp]').fill('2');
    await panel().locator('input[data-ablation-pp]').dispatchEvent('change');
    await panel().locator('input[data-ablation-vpp]').fill('2');
    await panel().locator('input[data-ablation-vpp]').dispatchEvent('change');
    await panel().locator('button[data-ablation-run]').click();
    await expect
      .poll(() => panel().locator('[data-ablation-summary], [data-ablation-error]').count(), { timeout: 90_000 })
      .toBe(1);
    const errors = await panel().locator('[data-ablation-error]').allTextContents();
    expect(errors).toEqual([]);
    expect(await panel().locator('li[data-flag="overlapP2p"][data-not-applicable]').textContent()).toContain(
      'cannot be turned off at p = 2',
    );
    expect(await panel().locator('li[data-flag="overlapGradReduce"][data-not-applicable]').textContent()).toContain(
      'DP × CP = 1',
    );
  }, 240_000);

  test('p beyond the cap (or not a whole number) is named at the panel and the last good p is kept', async () => {
    const pp = panel().locator('input[data-ablation-pp]');
    await pp.fill('1000000');
    await pp.dispatchEvent('change');
    await expect
      .poll(() => panel().locator('[data-ablation-error]').textContent())
      .toMatch(/pp = 1000000 is more than 64/);
    await pp.fill('2');
    await pp.dispatchEvent('change');
    expect(await panel().locator('[data-ablation-error]').count()).toBe(0);
    await pp.fill('1.5');
    await pp.dispatchEvent('change');
    await expect
      .poll(() => panel().locator('[data-ablation-error]').textContent())
      .toMatch(/pp must be a whole number ≥ 1, got "1.5"/);
  }, 60_000);
});
