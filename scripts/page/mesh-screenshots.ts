// npm run screenshots:mesh [-- --out docs/img --hash '#tp=2&pp=2&…']: the mesh card of the built page, whole (its
// schedule, live memory per stage and the chart by class), in windows of 1280×800 and 1920×1080, with the layout faults listed.
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
    await settle(open.page);
    // The whole card at this window's width: the schedule, the memory per stage and the chart by class.
    const path = join(values.out, `mesh-${size.width}x${size.height}.png`);
    await open.page.locator('[data-mesh]').screenshot({ path });
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
