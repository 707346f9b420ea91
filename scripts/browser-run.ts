import { chromium, type Page } from 'playwright';
import { build, createServer, preview } from 'vite';
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
  try {
    return await openInChromium(server.resolvedUrls?.local[0], path, body);
  } finally {
    await server.close();
  }
}

/** Options of a page opened in headless Chromium. */
export interface PageOptions {
  /** Viewport in CSS pixels (Playwright's default is 1280×720). */
  readonly viewport?: { readonly width: number; readonly height: number };
}

/**
 * Like withPage, but against the production build: runs `vite build` into `outDir` (default
 * dist/), serves it with `vite preview` (COOP/COEP from vite.config.ts) and opens `path` there.
 */
export async function withBuiltPage<T>(path: string, body: (page: Page, pageErrors: string[]) => Promise<T>, opts: PageOptions & { readonly outDir?: string } = {}): Promise<T> {
  const outDir = opts.outDir ?? 'dist';
  await build({ logLevel: 'error', build: { outDir, emptyOutDir: true } });
  const server = await preview({ preview: { port: 0, host: '127.0.0.1' }, build: { outDir }, logLevel: 'error' });
  try {
    return await openInChromium(server.resolvedUrls?.local[0], path, body, opts);
  } finally {
    await server.close();
  }
}

/** Opens `path` under `base` in headless Chromium with WebGPU; page errors are collected, console errors and warnings go to stderr. */
async function openInChromium<T>(base: string | undefined, path: string, body: (page: Page, pageErrors: string[]) => Promise<T>, opts: PageOptions = {}): Promise<T> {
  if (!base) throw new Error('withPage: the Vite server reported no local URL.');
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: chromiumArgs, headless: true });
  try {
    const page = await browser.newPage({ acceptDownloads: true, ...(opts.viewport ? { viewport: { ...opts.viewport } } : {}) });
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') process.stderr.write(`[page ${m.type()}] ${m.text()}\n`);
    });
    await page.goto(new URL(path.replace(/^\//, ''), base).href);
    return await body(page, pageErrors);
  } finally {
    await browser.close();
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
