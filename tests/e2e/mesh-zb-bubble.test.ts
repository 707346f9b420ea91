// ZB-H1 against 1F1B on the page (built page): the same layout run under both schedules, alternately,
// and ZB-H1's measured bubble the smaller. The layout is the one where W is a large share of the step
// and every rank has a stage to itself (docs/pipeline-view.md, "ZB-H1 against 1F1B, measured"): t 1 ×
// p 4 (four workers), no TP collective in B, and a layer wide enough (s 32, h 64, FFN 512) that the
// weight-gradient GEMMs, not per-kernel fixed costs, make up W.
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type OpenPage } from '../../scripts/device/browser-run.ts';
import { hashFromSettings, settingsFromHash } from '../../src/ui/settings/state.ts';
import { openE2ePage } from './built-page.ts';

const runTimeout = 240_000;
const p = 4;
const m = 4;
/** Runs per schedule, alternating, so both see the same load on the shared cores; each order compares medians. */
const runs = 3;
const hash = (schedule: string) =>
  `#tp=1&pp=${p}&m=${m}&layers=8&s=32&h=64&ffn=512&schedule=${schedule}&machine=custom`;
let open: OpenPage;
let page: Page;
const card = () => page.locator('[data-mesh]');
const view = () => card().locator('tp-pipeline-view');

/** Waits for the mesh run of `h` to be on screen; returns its measured bubble and its ranks' oracle. */
async function shown(h: string): Promise<{ measured: number; oracle: string | null }> {
  const canonical = hashFromSettings(settingsFromHash(h).settings);
  await expect.poll(() => card().getAttribute('data-mesh-shown'), { timeout: runTimeout }).toBe(canonical);
  return {
    measured: Number(await view().locator('[data-measured-bubble]').getAttribute('data-measured-bubble')),
    oracle: await card().locator('[data-mesh-oracle]').getAttribute('data-mesh-oracle'),
  };
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe(`ZB-H1 against 1F1B at t 1 × p ${p}, m ${m} (built page)`, () => {
  beforeAll(async () => {
    open = await openE2ePage(`/${hash('1f1b')}`, { viewport: { width: 1280, height: 800 } });
    page = open.page;
  }, 180_000);
  afterAll(async () => {
    await open?.close();
  });

  test('the measured bubble of ZB-H1 is smaller than 1F1B’s (median of alternating runs)', {
    timeout: 2 * runs * runTimeout,
  }, async () => {
    const bubbles: Record<'1f1b' | 'zb-h1', number[]> = { '1f1b': [], 'zb-h1': [] };
    for (let i = 0; i < runs; i++)
      for (const schedule of ['1f1b', 'zb-h1'] as const) {
        // Each hash change runs the mesh again (the shown run is the other schedule's).
        if (i > 0 || schedule !== '1f1b') await page.evaluate((h) => (location.hash = h), hash(schedule));
        const r = await shown(hash(schedule));
        expect(r.oracle, `${schedule} run ${i + 1}`).toBe('pass');
        bubbles[schedule].push(r.measured);
      }
    console.log(
      `t 1 × p ${p}, m ${m}, s 32, h 64, FFN 512: measured bubble 1f1b ${bubbles['1f1b'].map((x) => x.toFixed(3)).join(' ')}, zb-h1 ${bubbles['zb-h1'].map((x) => x.toFixed(3)).join(' ')}`,
    );
    expect(median(bubbles['zb-h1'])).toBeLessThan(median(bubbles['1f1b']));
    expect(open.pageErrors).toEqual([]);
  });
});
