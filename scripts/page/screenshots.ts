// npm run screenshots [-- --out docs/img]: the main views of the built page at 1280×800 and 1920×1080, as PNG, with their layout faults listed.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openBuiltPage } from '../device/browser-run.ts';
import { addLayoutAudit, layoutFaults, mainPageViews, resize, showView } from './page-views.ts';

const { values } = parseArgs({
  options: { out: { type: 'string', default: 'docs/img' }, help: { type: 'boolean', default: false } },
});
if (values.help) {
  console.log('usage: npm run screenshots -- [--out DIR (default docs/img)]');
  process.exit(0);
}
/** The sizes shot: a small laptop and the most common desktop. */
const sizes = [
  { width: 1280, height: 800 },
  { width: 1920, height: 1080 },
] as const;

mkdirSync(values.out, { recursive: true });
const open = await openBuiltPage('/', { outDir: 'test-results/screenshots-dist', viewport: sizes[0] });
let faults = 0;
try {
  await addLayoutAudit(open.page);
  for (const view of mainPageViews) {
    await showView(open.page, view);
    for (const size of sizes) {
      await resize(open.page, size);
      const path = join(values.out, `${view}-${size.width}x${size.height}.png`);
      await open.page.screenshot({ path }); // the window as a visitor first sees it
      const found = await layoutFaults(open.page);
      faults += found.length;
      console.log(`${path}${found.length ? '' : ' (no layout faults)'}`);
      for (const f of found) console.log(`    ${f.rule}: ${f.where}: ${f.detail}`);
    }
  }
  if (open.pageErrors.length) throw new Error(`screenshots: page errors: ${open.pageErrors.join('; ')}`);
} finally {
  await open.close();
}
if (faults) {
  console.error(`screenshots: ${faults} layout fault(s) above (tests/e2e/layout.test.ts fails on them).`);
  process.exit(1);
}
