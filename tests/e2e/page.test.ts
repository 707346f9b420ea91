import { expect, test } from 'vitest';
import { withPage } from '../../scripts/device/browser-run.ts';

test('the dev page loads cross-origin isolated, runs the default layer and names the WebGPU adapter it ran on', async () => {
  await withPage('/', async (page, pageErrors) => {
    const transport = page.locator('[data-source="transport"]');
    await expect
      .poll(() => transport.textContent().catch(() => ''), { timeout: 60_000 })
      .toMatch(/SharedArrayBuffer ring.*GPU: \S/);
    console.log(await transport.textContent());
    expect(await page.evaluate('crossOriginIsolated')).toBe(true);
    expect(pageErrors).toEqual([]);
  });
});
