// npm run screenshots:mesh [-- --out docs/img --hash '#tp=2&pp=2&…']: the mesh card of the built page at 1280×800 and
// 1920×1080, scrolled to its live memory (the curves per stage and the chart by class), with its layout faults listed.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openBuiltPage } from '../device/browser-run.ts';
import { addLayoutAudit, layoutFaults, resize, settle } from './page-views.ts';

const { values } = parseArgs({
  options: {
    out: { type: 'string', default: 'docs/img' },
    hash: { type: 'string', default: '#tp=2&pp=2&dp=2&m=4&layers=8&schedule=zb-h1&distopt=1&machine=custom' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log("usage: npm run screenshots:mesh -- [--out DIR (default docs/img)] [--hash '#tp=2&pp=2&…']");
  process.exit(0);
}
const sizes = [
  { width: 1280, height: 800 },
  { width: 1920, height: 1080 },
] as const;
const runMs = 240_000;

mkdirSync(values.out, { recursive: true });
const open = await openBuiltPage(`/${values.hash}`, { outDir: 'test-results/screenshots-dist', viewport: sizes[0] });
let faults = 0;
try {
  await addLayoutAudit(open.page);
  const view = open.page.locator('[data-mesh] tp-pipeline-view');
  await view.locator('g[data-stage-classes]').first().waitFor({ timeout: runMs });
  await open.page.waitForFunction(() => document.querySelector('tp-app')?.getAttribute('data-busy') === 'false');
  for (const size of sizes) {
    await resize(open.page, size);
    // The live-memory heading at the window's top: the curves per stage and, below, the chart by class.
    await view.locator('h4:has-text("Live memory per stage")').evaluate((e) => e.scrollIntoView());
    await settle(open.page);
    const path = join(values.out, `mesh-${size.width}x${size.height}.png`);
    await open.page.screenshot({ path });
    const found = await layoutFaults(open.page);
    faults += found.length;
    console.log(`${path}${found.length ? '' : ' (no layout faults)'}`);
    for (const f of found) console.log(`    ${f.rule}: ${f.where}: ${f.detail}`);
  }
  if (open.pageErrors.length) throw new Error(`screenshots:mesh: page errors: ${open.pageErrors.join('; ')}`);
} finally {
  await open.close();
}
if (faults) process.exit(1);
