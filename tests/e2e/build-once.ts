// vitest globalSetup of the e2e project: one `vite build` of the page for every e2e file of the run.
import { buildPage } from '../../scripts/device/browser-run.ts';
import { e2eDist } from './built-page.ts';

/** Builds the page once before the e2e files start. */
export default async function setup(): Promise<void> {
  await buildPage(e2eDist);
}
