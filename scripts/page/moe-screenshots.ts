// npm run screenshots:moe [-- --out docs/img]: the page with the classroom MoE preset at EP 4, at 1280×800 and 1920×1080 — the top card (the MoE block stage by stage), the timeline view scrolled to the layer's lanes, the shapes card (the MoE block's weights), and the classroom view's MoE steps (the dispatch step) — with their layout faults listed.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Page } from 'playwright';
import { openBuiltPage } from '../device/browser-run.ts';
import { addLayoutAudit, layoutFaults, resize } from './page-views.ts';

const { values } = parseArgs({
  options: { out: { type: 'string', default: 'docs/img' }, help: { type: 'boolean', default: false } },
});
if (values.help) {
  console.log('usage: npm run screenshots:moe -- [--out DIR (default docs/img)]');
  process.exit(0);
}
/** The classroom MoE preset (docs/moe-view.md): 8 experts of 16, top-2, EP 4 on 4 ranks, aux 0.01. */
const hash = '#preset=classroom&tp=1&sp=0&experts=8&moeffn=16&ep=4&aux=0.01';
const sizes = [
  { width: 1280, height: 800 },
  { width: 1920, height: 1080 },
] as const;

/** The timeline view at the page's top: the top card with the MoE block's stages and the run's rows. */
async function top(page: Page): Promise<void> {
  await page.locator('tp-moe-view[data-state="done"]').waitFor({ timeout: 180_000 });
  await page.evaluate(() => window.scrollTo(0, 0));
}

/** The timeline view, the window scrolled so the layer's lanes sit at its top. */
async function timeline(page: Page): Promise<void> {
  await page.locator('tp-moe-view[data-state="done"]').waitFor({ timeout: 180_000 });
  await page.locator('tp-timeline[data-moe="timeline"]').evaluate((el) => el.scrollIntoView({ block: 'start' }));
}

/** The timeline view scrolled to the shapes card: the attention half's shapes and the MoE block's weights. */
async function shapes(page: Page): Promise<void> {
  await page.locator('tp-moe-view[data-state="done"]').waitFor({ timeout: 180_000 });
  await page.locator('tp-shapes').evaluate((el) => el.scrollIntoView({ block: 'start' }));
}

/** The classroom view, its MoE card's dispatch step shown at the window's top. */
async function classroom(page: Page): Promise<void> {
  await page.locator('[data-moe-classroom][data-state="done"]').waitFor({ timeout: 180_000 });
  await page.locator('tp-classroom-moe button[data-outline="moe"][data-step="dispatch"]').click();
  await page.locator('[data-moe-classroom]').evaluate((el) => el.scrollIntoView({ block: 'start' }));
}

mkdirSync(values.out, { recursive: true });
const open = await openBuiltPage(`/${hash}`, { outDir: 'test-results/screenshots-dist', viewport: sizes[0] });
let faults = 0;
try {
  await addLayoutAudit(open.page);
  for (const [name, show] of [
    ['moe-top', top],
    ['moe-timeline', timeline],
    ['moe-shapes', shapes],
    ['moe-classroom', classroom],
  ] as const) {
    if (name === 'moe-classroom')
      await open.page.evaluate((h) => (location.hash = `#view=classroom&${h.slice(1)}`), hash);
    for (const size of sizes) {
      await resize(open.page, size);
      await show(open.page);
      const path = join(values.out, `${name}-${size.width}x${size.height}.png`);
      await open.page.screenshot({ path });
      const found = await layoutFaults(open.page);
      faults += found.length;
      console.log(`${path}${found.length ? '' : ' (no layout faults)'}`);
      for (const f of found) console.log(`    ${f.rule}: ${f.where}: ${f.detail}`);
    }
  }
  if (open.pageErrors.length) throw new Error(`moe screenshots: page errors: ${open.pageErrors.join('; ')}`);
} finally {
  await open.close();
}
if (faults) {
  console.error(`moe screenshots: ${faults} layout fault(s) above.`);
  process.exit(1);
}
