// Fresh loads of the playground for bench:ui: when the first timeline and the first oracle appear after navigation start.
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright';
import ts from 'typescript';
import type { FirstPaint } from '../../src/bench/ui-first-paint.ts';

/** One fresh load of one page: ms after navigation start. */
export interface FirstPaintLoad {
  readonly hash: string;
  readonly timelineMs: number;
  readonly oracleMs: number;
}

/** The probe as a classic script (an init script runs before the page's modules). */
function probeScript(): string {
  const js = ts.transpileModule(readFileSync('src/bench/ui-first-paint.ts', 'utf8'), {
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext },
  }).outputText;
  return `${js.replace(/^export /gm, '')}\nwindow.__firstPaint = watchFirstPaint();`;
}

/**
 * Loads `base + hash` `loads` times for each hash, alternating hashes, each in a new browser
 * context (empty cache and storage: no stored GEMM tuning), in the browser of `page`, and returns
 * when each showed its first timeline lane and its oracle (src/bench/ui-first-paint.ts).
 */
export async function firstPaintLoads(
  page: Page,
  base: string,
  hashes: readonly string[],
  loads: number,
  progress: (line: string) => void,
  timeoutMs = 600_000,
): Promise<FirstPaintLoad[]> {
  const browser = page.context().browser();
  if (!browser) throw new Error('bench:ui: the page has no browser to open fresh contexts in.');
  const probe = probeScript();
  const out: FirstPaintLoad[] = [];
  for (let i = 0; i < loads; i++)
    for (const hash of hashes) {
      const ctx = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
      try {
        const p = await ctx.newPage();
        const errors: string[] = [];
        p.on('pageerror', (e) => errors.push(e.message));
        await p.addInitScript({ content: probe });
        await p.goto(new URL(`/${hash}`, base).href);
        await p.waitForFunction(
          '(() => { const f = window.__firstPaint; return f && f.timelineMs !== undefined && f.oracleMs !== undefined; })()',
          undefined,
          { timeout: timeoutMs, polling: 200 },
        );
        const f = (await p.evaluate('window.__firstPaint')) as Required<FirstPaint>;
        if (errors.length) throw new Error(`bench:ui: page errors at ${hash}: ${errors.join('; ')}`);
        out.push({ hash, ...f });
        progress(
          `fresh load ${hash}: first timeline ${f.timelineMs.toFixed(0)} ms, oracle ${f.oracleMs.toFixed(0)} ms after navigation start`,
        );
      } finally {
        await ctx.close();
      }
    }
  return out;
}
