import { expect, test } from 'vitest';
import { withPage } from '../../scripts/browser-run.ts';

test('the playground page loads cross-origin isolated and names the WebGPU adapter it found', async () => {
  await withPage('/', async (page, pageErrors) => {
    const line = page.locator('#adapter');
    await expect.poll(() => line.textContent(), { timeout: 30_000 }).toMatch(/^WebGPU adapter: \S/);
    console.log(await line.textContent());
    expect(await page.evaluate('crossOriginIsolated')).toBe(true);
    expect(pageErrors).toEqual([]);
  });
});
