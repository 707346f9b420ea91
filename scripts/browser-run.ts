import { chromium, type Page } from 'playwright';
import { createServer } from 'vite';
import { chromiumArgs, chromiumPath } from './chromium.ts';

/** Options of a headless run. */
export interface BrowserRunOptions {
  /** Lines the page reports through the `onProgress` callback it is given (e.g. to stderr). */
  readonly onProgress?: (line: string) => void;
  /** Give up after this long (ms); the run then fails with a message instead of hanging. */
  readonly timeoutMs?: number;
}

/**
 * Serves the project with Vite (COOP/COEP from vite.config.ts, so pages are cross-origin
 * isolated), opens `path` (from the project root, e.g. '/' or 'scripts/runner.html') in headless
 * Chromium with WebGPU, and returns `body(page)`. Page errors and console errors and warnings go
 * to stderr; server and browser are closed whatever happens.
 */
export async function withPage<T>(path: string, body: (page: Page, pageErrors: string[]) => Promise<T>): Promise<T> {
  // No HMR and no watcher: edits made while a long benchmark runs must not reload its page.
  const server = await createServer({ server: { port: 0, host: '127.0.0.1', hmr: false, watch: null }, logLevel: 'error', clearScreen: false });
  await server.listen();
  const base = server.resolvedUrls?.local[0];
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: chromiumArgs, headless: true });
  try {
    if (!base) throw new Error('withPage: the Vite server reported no local URL.');
    const page = await browser.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') process.stderr.write(`[page ${m.type()}] ${m.text()}\n`);
    });
    await page.goto(new URL(path.replace(/^\//, ''), base).href);
    return await body(page, pageErrors);
  } finally {
    await browser.close();
    await server.close();
  }
}

/**
 * Imports `entry` (a path from the project root, e.g. '/src/bench/gemm-bench.ts') into a blank
 * cross-origin-isolated page and returns `await entry[fn]({ ...args, onProgress })`. The result
 * must be structured-cloneable (JSON-like).
 */
export function runInBrowser<T>(entry: string, fn: string, args: Record<string, unknown>, opts: BrowserRunOptions = {}): Promise<T> {
  return withPage('scripts/runner.html', async (page, pageErrors) => {
    await page.exposeFunction('__runnerProgress', (line: string) => opts.onProgress?.(line));
    // The page code is a string: tsx's transform would otherwise inject helpers the page lacks.
    const call = `(async () => {
      const mod = await import(${JSON.stringify(entry)});
      if (typeof mod[${JSON.stringify(fn)}] !== 'function') throw new Error(${JSON.stringify(`${entry} exports no function ${fn}`)});
      return mod[${JSON.stringify(fn)}]({ ...${JSON.stringify(args)}, onProgress: (l) => void window.__runnerProgress(l) });
    })()`;
    const run = page.evaluate(call) as Promise<T>;
    const limit = opts.timeoutMs ?? 30 * 60_000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`runInBrowser: ${entry}#${fn} did not finish within ${limit / 1000} s.${pageErrors.length ? ` Page errors: ${pageErrors.join('; ')}` : ''}`)), limit);
    });
    try {
      return await Promise.race([run, timeout]);
    } finally {
      clearTimeout(timer);
    }
  });
}
