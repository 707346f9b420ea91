// ZB-H1 against 1F1B on the page (built page): each layout run under both schedules, alternately,
// and ZB-H1's measured bubble the smaller. The layout is one where W is a large share of the step
// (docs/pipeline-view.md, "Where the order holds, and the test of it"): t 1 × p 4 (four workers, each
// stage alone), no TP collective in B, and a layer wide enough (s 32, h 64, FFN 512) that the
// weight-gradient GEMMs, not per-kernel fixed costs, make up W. At t 2 × p 2 × d 2 the order held on a
// wide FFN (the sweep's figures there) by too thin a margin for a check on two shared cores.
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type OpenPage } from '../../scripts/device/browser-run.ts';
import { hashFromSettings, settingsFromHash } from '../../src/ui/settings/state.ts';
import { openE2ePage } from './built-page.ts';

const runTimeout = 240_000;
/** Runs per schedule, alternating, so both see the same load on the shared cores; each order compares medians. */
const runs = 3;
const layouts = [
  { label: 't 1 × p 4, m 4, s 32, h 64, FFN 512', params: 'tp=1&pp=4&m=4&layers=8&s=32&h=64&ffn=512' },
] as const;
const hash = (params: string, schedule: string) => `#${params}&schedule=${schedule}&machine=custom`;
let open: OpenPage;
let page: Page;
const card = () => page.locator('[data-mesh]');
const view = () => card().locator('tp-pipeline-view');

/** Shows the mesh run of `h` (a hash change runs the mesh again) and returns its measured bubble and its ranks' oracle. */
async function shown(h: string): Promise<{ measured: number; oracle: string | null }> {
  const canonical = hashFromSettings(settingsFromHash(h).settings);
  if ((await card().getAttribute('data-mesh-shown')) !== canonical) await page.evaluate((x) => (location.hash = x), h);
  await expect.poll(() => card().getAttribute('data-mesh-shown'), { timeout: runTimeout }).toBe(canonical);
  return {
    measured: Number(await view().locator('[data-measured-bubble]').getAttribute('data-measured-bubble')),
    oracle: await card().locator('[data-mesh-oracle]').getAttribute('data-mesh-oracle'),
  };
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe('ZB-H1 against 1F1B, m 4 (built page)', () => {
  beforeAll(async () => {
    open = await openE2ePage(`/${hash(layouts[0].params, '1f1b')}`, { viewport: { width: 1280, height: 800 } });
    page = open.page;
  }, 180_000);
  afterAll(async () => {
    await open?.close();
  });

  for (const layout of layouts)
    test(`${layout.label}: the measured bubble of ZB-H1 is smaller than 1F1B’s (median of alternating runs)`, {
      timeout: 2 * runs * runTimeout,
    }, async () => {
      const bubbles: Record<'1f1b' | 'zb-h1', number[]> = { '1f1b': [], 'zb-h1': [] };
      for (let i = 0; i < runs; i++)
        for (const schedule of ['1f1b', 'zb-h1'] as const) {
          const r = await shown(hash(layout.params, schedule));
          expect(r.oracle, `${schedule} run ${i + 1}`).toBe('pass');
          bubbles[schedule].push(r.measured);
        }
      console.log(
        `${layout.label}: measured bubble 1f1b ${bubbles['1f1b'].map((x) => x.toFixed(3)).join(' ')}, zb-h1 ${bubbles['zb-h1'].map((x) => x.toFixed(3)).join(' ')}`,
      );
      expect(median(bubbles['zb-h1'])).toBeLessThan(median(bubbles['1f1b']));
      expect(open.pageErrors).toEqual([]);
    });
});
