// A system file (npm run project -- --calibrate's output, or written by hand) loaded on the page:
// the cluster panel and the advisor project on it, exactly as on the catalog system it equals, and
// slower where its link is slower.
import type { Page } from 'playwright';
import { expect, test } from 'vitest';
import { systemFileText } from '../../src/calibrate/system-file.ts';
import { systems, type SystemSpec } from '../../src/hardware/systems.ts';
import { withE2ePage } from './built-page.ts';
import { waitShownRun } from './shown-run.ts';

const base = systems['dgx-h100'];
/** The catalog's DGX H100 under another label; and with a node link at a quarter of its bandwidth. */
const same: SystemSpec = { ...base, name: 'same-h100', label: 'Same H100 from a file' };
const slow: SystemSpec = {
  ...base,
  name: 'slow-h100',
  label: 'Slow-link H100 from a file',
  intra: { ...base.intra, busGBps: base.intra.busGBps / 4 },
};

const load = (page: Page, name: string, system: SystemSpec) =>
  page
    .locator('tp-machine-controls input[data-control="system-file"]')
    .setInputFiles({ name, mimeType: 'application/json', buffer: Buffer.from(systemFileText(system)) });

/**
 * The cluster panel's tokens/s at t = 2 without SP once its caption names `label`: its TP
 * all-reduces cross the node's link (the panel's d is the mesh's, 1 here, so t = 1 sends nothing).
 */
async function clusterTokens(page: Page, label: string): Promise<number> {
  const panel = page.locator('tp-cluster-panel');
  await expect.poll(() => panel.locator('[data-cluster-caption]').textContent(), { timeout: 60_000 }).toContain(label);
  const cell = panel.locator('tr[data-tp="2"][data-sp="false"] td[data-tokens]');
  await expect.poll(() => cell.count(), { timeout: 60_000 }).toBe(1);
  return Number(await cell.getAttribute('data-tokens'));
}

/** The advisor's best tokens/s after a search. */
async function advisorBest(page: Page): Promise<number> {
  const advisor = page.locator('tp-advisor-panel');
  await advisor.locator('button[data-advisor-search]').click();
  const first = advisor.locator('table[data-advisor-table] tbody tr[data-rank="1"]');
  await expect.poll(() => first.count(), { timeout: 120_000, interval: 250 }).toBe(1);
  await expect.poll(() => advisor.locator('[data-advisor-progress]').count(), { timeout: 120_000 }).toBe(0);
  return Number(await first.getAttribute('data-tokens'));
}

test('a system file chosen on the page drives the cluster panel and the advisor; a bad file is named', async () => {
  await withE2ePage('/#tp=2', async (page, pageErrors) => {
    await waitShownRun(page, 90_000, 'tp=2');
    await page.locator('tp-machine-controls select[data-control="system"]').selectOption('dgx-h100');
    const catalog = await clusterTokens(page, base.label);
    const catalogBest = await advisorBest(page);

    await load(page, 'same-h100.json', same);
    await expect
      .poll(() => page.evaluate(() => decodeURIComponent(location.hash)))
      .toContain('system=file:same-h100.json');
    expect(await clusterTokens(page, same.label)).toBe(catalog);

    await load(page, 'slow-h100.json', slow);
    const slowTokens = await clusterTokens(page, slow.label);
    expect(slowTokens).toBeLessThan(catalog);
    expect(await advisorBest(page)).toBeLessThan(catalogBest);

    await page
      .locator('tp-machine-controls input[data-control="system-file"]')
      .setInputFiles({ name: 'broken.json', mimeType: 'application/json', buffer: Buffer.from('{"kind": "x"}') });
    await expect
      .poll(() => page.locator('tp-machine-controls [data-error-for="system"]').textContent())
      .toMatch(/broken\.json/);
    expect(pageErrors).toEqual([]);
  });
}, 400_000);
