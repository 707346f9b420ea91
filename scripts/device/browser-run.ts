import { existsSync } from 'node:fs';
import { join } from 'node:path';
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
 * isolated), opens `path` (from the project root, e.g. '/' or 'scripts/device/runner.html') in headless
 * Chromium with WebGPU, and returns `body(page)`. Page errors and console errors and warnings go
 * to stderr; server and browser are closed whatever happens.
 */
export async function withPage<T>(path: string, body: (page: Page, pageErrors: string[]) => Promise<T>): Promise<T> {
  // No HMR and no watcher: edits made while a long benchmark runs must not reload its page.
  const server = await createServer({
    server: { port: 0, host: '127.0.0.1', hmr: false, watch: null },
    logLevel: 'error',
    clearScreen: false,
  });
  await server.listen();
  try {
    const open = await openInChromium(server.resolvedUrls?.local[0], path);
    try {
      return await body(open.page, open.pageErrors);
    } finally {
      await open.close();
    }
  } finally {
    await server.close();
  }
}

/** Options of a page opened in headless Chromium. */
export interface PageOptions {
  /** Viewport in CSS pixels (Playwright's default is 1280×720). */
  readonly viewport?: { readonly width: number; readonly height: number };
}

/** A page open in headless Chromium, its collected page errors, and how to close page, browser and server. */
export interface OpenPage {
  readonly page: Page;
  readonly pageErrors: string[];
  readonly base: string;
  close(): Promise<void>;
}

/** Where the page is built and whether to build it. */
export interface BuiltPageOptions extends PageOptions {
  /** The build's directory (default dist/). */
  readonly outDir?: string;
  /** Serve `outDir` as it is, built once before (tests/e2e/build-once.ts), instead of building it again. */
  readonly prebuilt?: boolean;
}

/** Runs `vite build` of the page into `outDir` in production mode. */
export async function buildPage(outDir: string): Promise<void> {
  // Vite picks packages' "production" exports (lit without dev-mode checks) only when NODE_ENV says so; vitest sets "test".
  const env = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({ logLevel: 'error', mode: 'production', build: { outDir, emptyOutDir: true } });
  } finally {
    process.env.NODE_ENV = env;
  }
}

/**
 * Serves the production build: runs `vite build` into `outDir` (default dist/; not with
 * `prebuilt`), serves it with `vite preview` (COOP/COEP from vite.config.ts) and opens `path`
 * there in headless Chromium with WebGPU. The caller must `close()` it (for suites that share one
 * page across tests).
 */
export async function openBuiltPage(path: string, opts: BuiltPageOptions = {}): Promise<OpenPage> {
  const outDir = opts.outDir ?? 'dist';
  if (!opts.prebuilt) await buildPage(outDir);
  else if (!existsSync(join(outDir, 'index.html')))
    throw new Error(`openBuiltPage: ${outDir}/index.html is missing; build it first (buildPage) or drop prebuilt.`);
  const server = await preview({ preview: { port: 0, host: '127.0.0.1' }, build: { outDir }, logLevel: 'error' });
  try {
    const open = await openInChromium(server.resolvedUrls?.local[0], path, opts);
    return {
      ...open,
      close: async () => {
        await open.close();
        await server.close();
      },
    };
  } catch (e) {
    await server.close();
    throw e;
  }
}

/** Like withPage, but against the production build served by `vite preview` (see openBuiltPage). */
export async function withBuiltPage<T>(
  path: string,
  body: (page: Page, pageErrors: string[]) => Promise<T>,
  opts: BuiltPageOptions = {},
): Promise<T> {
  const open = await openBuiltPage(path, opts);
  try {
    return await body(open.page, open.pageErrors);
  } finally {
    await open.close();
  }
}

/** Opens `path` under `base` in headless Chromium with WebGPU; page errors are collected, console errors and warnings go to stderr. */
async function openInChromium(base: string | undefined, path: string, opts: PageOptions = {}): Promise<OpenPage> {
  if (!base) throw new Error('withPage: the Vite server reported no local URL.');
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: chromiumArgs, headless: true });
  try {
    const page = await browser.newPage({
      acceptDownloads: true,
      ...(opts.viewport ? { viewport: { ...opts.viewport } } : {}),
    });
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') process.stderr.write(`[page ${m.type()}] ${m.text()}\n`);
    });
    await page.goto(new URL(path.replace(/^\//, ''), base).href);
    return { page, pageErrors, base, close: () => browser.close() };
  } catch (e) {
    await browser.close();
    throw e;
  }
}

/**
 * Imports `entry` (a path from the project root, e.g. '/src/bench/gemm-bench.ts') into a blank
 * cross-origin-isolated page and returns `await entry[fn]({ ...args, onProgress })`. The result
 * must be structured-cloneable (JSON-like).
 */
export function runInBrowser<T>(
  entry: string,
  fn: string,
  args: Record<string, unknown>,
  opts: BrowserRunOptions = {},
): Promise<T> {
  return withPage('scripts/device/runner.html', async (page, pageErrors) => {
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
      timer = setTimeout(
        () =>
          reject(
            new Error(
              `runInBrowser: ${entry}#${fn} did not finish within ${limit / 1000} s.${pageErrors.length ? ` Page errors: ${pageErrors.join('; ')}` : ''}`,
            ),
          ),
        limit,
      );
    });
    try {
      return await Promise.race([run, timeout]);
    } finally {
      clearTimeout(timer);
    }
  });
}
