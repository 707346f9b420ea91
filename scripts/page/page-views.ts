// The playground's main views in headless Chromium: open each one drawn, and audit its layout (tests/e2e/layout.test.ts, scripts/page/screenshots.ts).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright';
import ts from 'typescript';
import type { LayoutFault } from './layout-audit.ts';

/** The views a visitor sees first, in the order of the page's navigation. */
export const mainPageViews = ['timeline', 'classroom', 'gemm', 'trace'] as const;
/** One of mainPageViews. */
export type MainPageView = (typeof mainPageViews)[number];

/** The viewports the layout is checked at: a small laptop, the most common desktop, a large desktop. */
export const layoutViewports = [
  { width: 1280, height: 800 },
  { width: 1920, height: 1080 },
  { width: 2560, height: 1440 },
] as const;

/** Path of a Kineto fixture under tests/fixtures/kineto/. */
export const kinetoFixture = (name: string): string =>
  fileURLToPath(new URL(`../../tests/fixtures/kineto/${name}`, import.meta.url));

/**
 * Drops `names` on `tp-trace-view [data-drop]` as a user's drag and drop would (one DataTransfer
 * of Files): Kineto fixtures by name, or files given with their text (a job manifest).
 */
export async function dropTraces(
  page: Page,
  names: readonly (string | { readonly name: string; readonly text: string })[],
): Promise<void> {
  const files = names.map((n) =>
    typeof n === 'string'
      ? { name: n, b64: readFileSync(kinetoFixture(n)).toString('base64') }
      : { name: n.name, b64: Buffer.from(n.text).toString('base64') },
  );
  const dt = await page.evaluateHandle((fs) => {
    const d = new DataTransfer();
    for (const f of fs) {
      const bytes = Uint8Array.from(atob(f.b64), (c) => c.charCodeAt(0));
      d.items.add(new File([bytes], f.name));
    }
    return d;
  }, files);
  await page.locator('tp-trace-view [data-drop]').dispatchEvent('drop', { dataTransfer: dt });
}

/** What shows that a view is drawn with its data (not only its frame). */
const drawn: Record<MainPageView, string> = {
  timeline: 'tp-cluster-panel svg[data-chart="memory"] .tick',
  classroom: 'tp-classroom figure [data-value]',
  gemm: 'tp-gemm-view svg .tick',
  trace: 'tp-trace-totals tr[data-rank]',
};

/**
 * Switches the open playground page to `view` through its navigation (no reload) and waits until
 * it is drawn: the trace view gets the two-rank fixtures dropped on it; the others wait for their
 * charts or figures and for the page to be idle.
 */
export async function showView(page: Page, view: MainPageView, timeoutMs = 240_000): Promise<void> {
  await page.locator(`tp-app nav a:has-text("${navNames[view]}")`).click();
  if (view === 'trace') {
    await page.locator('tp-trace-view [data-drop]').waitFor({ timeout: timeoutMs });
    if (!(await page.locator(drawn.trace).count())) await dropTraces(page, ['tp2-rank0.json', 'tp2-rank1.json.gz']);
  }
  await page.locator(drawn[view]).first().waitFor({ timeout: timeoutMs });
  await page.waitForFunction(() => document.querySelector('tp-app')?.getAttribute('data-busy') === 'false', undefined, {
    timeout: timeoutMs,
  });
  await settle(page);
}

/** The navigation link text of each view (tp-app's viewNames). */
const navNames: Record<MainPageView, string> = {
  timeline: 'Timeline',
  classroom: 'Classroom',
  gemm: 'GEMM efficiency',
  trace: 'Measured trace',
};

/** Waits two animation frames and a short pause: resize observers and D3 redraws have run. */
export async function settle(page: Page): Promise<void> {
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  await page.waitForTimeout(300);
}

/** Sets the viewport and waits for the page to lay itself out again. */
export async function resize(page: Page, size: { readonly width: number; readonly height: number }): Promise<void> {
  await page.setViewportSize({ ...size });
  await settle(page);
}

/** Adds scripts/page/layout-audit.ts to the page (transpiled here: the page gets plain JavaScript). */
export async function addLayoutAudit(page: Page): Promise<void> {
  const src = readFileSync(fileURLToPath(new URL('./layout-audit.ts', import.meta.url)), 'utf8');
  const js = ts.transpileModule(src, {
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext },
  }).outputText;
  await page.addScriptTag({ type: 'module', content: `${js}\nwindow.__layoutFaults = layoutFaults;` });
  await page.waitForFunction('!!window.__layoutFaults');
}

/** The layout faults of the page as drawn now (addLayoutAudit first). */
export function layoutFaults(page: Page): Promise<LayoutFault[]> {
  return page.evaluate('window.__layoutFaults()') as Promise<LayoutFault[]>;
}
