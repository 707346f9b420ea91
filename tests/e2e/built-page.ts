// The production build every e2e file serves: built once per run by build-once.ts (vitest globalSetup).
import type { Page } from 'playwright';
import { openBuiltPage, withBuiltPage, type OpenPage, type PageOptions } from '../../scripts/device/browser-run.ts';

/** The e2e project's one production build of the page. */
export const e2eDist = 'test-results/e2e-dist';

/** openBuiltPage on the run's one build (no `vite build` per file). */
export const openE2ePage = (path: string, opts: PageOptions = {}): Promise<OpenPage> =>
  openBuiltPage(path, { ...opts, outDir: e2eDist, prebuilt: true });

/** withBuiltPage on the run's one build: a fresh browser on `path`, closed after `body`. */
export const withE2ePage = <T>(
  path: string,
  body: (page: Page, pageErrors: string[]) => Promise<T>,
  opts: PageOptions = {},
): Promise<T> => withBuiltPage(path, body, { ...opts, outDir: e2eDist, prebuilt: true });
