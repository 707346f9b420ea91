// npm run screenshots:cluster-model [-- --out docs/img]: the cluster panel with Mixtral 8x7B pasted as its config.json (rows on t × d = 8 replicas of H100s, bf16, EP 8, the distributed optimizer, --overlap-grad-reduce) and the config control, at 1280×800 and 1920×1080.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { publicHfConfig } from '../../src/megatron/hf-configs.ts';
import { openBuiltPage } from '../device/browser-run.ts';
import { resize, settle } from './page-views.ts';

const { values } = parseArgs({ options: { out: { type: 'string', default: 'docs/img' } } });
mkdirSync(values.out, { recursive: true });
const sizes = [
  { width: 1280, height: 800 },
  { width: 1920, height: 1080 },
] as const;

const open = await openBuiltPage('/#tp=1&dp=8&system=dgx-h100&dtype=bf16&ep=8&distopt=1&ogr=1', {
  outDir: 'test-results/screenshots-dist',
  viewport: sizes[0],
});
try {
  const { page } = open;
  const area = page.locator('tp-machine-controls textarea[data-control="hf-config"]');
  await area.fill(JSON.stringify(publicHfConfig('mixtral-8x7b-v0.1')!.config, null, 1));
  await area.dispatchEvent('change');
  // The pasted model priced at the page's EP 8 (the caption's E:k:EP:ETP).
  await page.locator('tp-cluster-panel [data-cluster-moe="8:2:8:1"]').waitFor({ state: 'attached', timeout: 120_000 });
  await page.locator('tp-cluster-panel svg[data-chart="memory"] .tick').first().waitFor({ timeout: 120_000 });
  for (const size of sizes) {
    await resize(page, size);
    await page.locator('tp-cluster-panel h2').evaluate((h) => h.scrollIntoView({ block: 'start' }));
    await settle(page);
    const path = join(values.out, `cluster-moe-config-${size.width}x${size.height}.png`);
    await page.screenshot({ path });
    console.log(path);
    await page
      .locator('tp-machine-controls [data-cluster-model-controls]')
      .evaluate((f) => f.scrollIntoView({ block: 'start' }));
    await settle(page);
    const control = join(values.out, `cluster-model-control-${size.width}x${size.height}.png`);
    await page.screenshot({ path: control });
    console.log(control);
  }
  if (open.pageErrors.length) throw new Error(`page errors: ${open.pageErrors.join('; ')}`);
} finally {
  await open.close();
}
