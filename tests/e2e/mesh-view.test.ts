// The rank mesh on the page end to end (built page): a pipeline run on the rank workers, drawn as the ranks ran it, checked against one device.
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type OpenPage } from '../../scripts/device/browser-run.ts';
import { hashFromSettings, settingsFromHash } from '../../src/ui/settings/state.ts';
import { openE2ePage } from './built-page.ts';

const runTimeout = 240_000;
let open: OpenPage;
let page: Page;

const t = 2;
const p = 2;
const d = 2;
const m = 4;
const hash = (schedule: string) => `#tp=${t}&pp=${p}&dp=${d}&m=${m}&layers=8&schedule=${schedule}&machine=custom`;
const card = () => page.locator('[data-mesh]');
const view = () => card().locator('tp-pipeline-view');

/** Waits for the mesh run of `h` to be on screen, and returns its measured and projected bubble shares. */
async function shown(h: string): Promise<{ measured: number; projected: number; formula: number }> {
  const canonical = hashFromSettings(settingsFromHash(h).settings);
  await expect.poll(() => card().getAttribute('data-mesh-shown'), { timeout: runTimeout }).toBe(canonical);
  const num = async (attr: string) => Number(await view().locator(`[${attr}]`).getAttribute(attr));
  return {
    measured: await num('data-measured-bubble'),
    projected: await num('data-projected-bubble').catch(() => NaN),
    formula: await num('data-formula-bubble'),
  };
}

describe(`a mesh of t ${t} × p ${p} × d ${d} rank workers on the page (built page)`, () => {
  beforeAll(async () => {
    open = await openE2ePage(`/${hash('1f1b')}`, { viewport: { width: 1280, height: 800 } });
    page = open.page;
  }, 180_000);
  afterAll(async () => {
    await open?.close();
  });

  test('1F1B: every rank runs, the oracle passes, p2p arrows join the stages, the measured bubble sits beside the projected one', {
    timeout: runTimeout + 30_000,
  }, async () => {
    const b = await shown(hash('1f1b'));
    expect(await card().locator('[data-mesh-oracle]').getAttribute('data-mesh-oracle')).toBe('pass');
    expect(await card().getAttribute('data-mesh-ranks')).toBe(String(t * p * d));
    // One lane per replica and stage (collapsed), each with m forwards, m backwards and its DP sync.
    for (let q = 0; q < d; q++)
      for (let i = 0; i < p; i++) {
        const lane = view().locator(`g[data-stage="${i}"][data-replica="${q}"]`);
        expect(await lane.locator('rect[data-pass="forward"]').count()).toBe(m);
        expect(await lane.locator('rect[data-pass="backward"]').count()).toBe(m);
        expect(await lane.locator('rect[data-kind="dp-sync"]').count()).toBeGreaterThan(0);
      }
    // One arrow per message between the lanes: m activations down and m gradients up per boundary and replica.
    expect(await view().locator('line[data-kind="p2p"]').count()).toBe(2 * m * (p - 1) * d);
    expect(await view().locator('rect[data-kind="bubble"]').count()).toBeGreaterThan(0);
    for (const x of [b.measured, b.projected, b.formula]) expect(x).toBeGreaterThan(0);
    expect(b.formula).toBeCloseTo((p - 1) / (m + p - 1), 12);
    // Live memory per stage: a curve each; under 1F1B stage 0 holds p micro-batches' activations at once, the last
    // stage one, so stage 0's peak is the higher (bytes, not times: the same every run).
    expect(await view().locator('path[data-kind="stage-memory"]').count()).toBe(p * d);
    const peak = async (i: number) =>
      Number(await view().locator(`[data-stage-peak="${i}"]`).getAttribute('data-bytes'));
    expect(await peak(0)).toBeGreaterThan(await peak(p - 1));
    // By class: every rank's weights, gradient sums and saved activations after every pass equal the accounting.
    expect(await view().locator('p[data-stage-classes]').getAttribute('data-check')).toBe('pass');
    expect(await view().locator('g[data-stage-classes]').count()).toBe(p);
    expect(await view().locator('g[data-stage-classes] path[data-class="activations"]').count()).toBe(p);
    expect(await view().locator('g[data-stage-classes] path[data-class="deferredW"]').count()).toBe(0);
    console.log(
      `t ${t} × p ${p} × d ${d}, m ${m}, 1f1b: measured bubble ${b.measured.toFixed(3)}, projected ${b.projected.toFixed(3)}, formula ${b.formula.toFixed(3)}`,
    );
  });

  test("clicking a stage opens its TP ranks' own lanes, each with its TP collectives", async () => {
    await view().locator('button[data-stage-button="1"]').click();
    await expect.poll(() => view().locator('g[data-stage="1"]').count()).toBe(t * d);
    expect(await view().locator('g[data-stage="0"]').count()).toBe(d);
    expect(await view().locator('g[data-stage="1"] rect[data-kind="tp-comm"]').count()).toBeGreaterThan(0);
    await view().locator('button[data-stage-button="1"]').click(); // closes it again
    await expect.poll(() => view().locator('g[data-stage="1"]').count()).toBe(d);
    expect(open.pageErrors).toEqual([]);
  });

  test('ZB-H1 on the same layout: the weight passes run on every stage and the oracle passes', {
    timeout: runTimeout + 30_000,
  }, async () => {
    await page.evaluate((h) => (location.hash = h), hash('zb-h1'));
    const b = await shown(hash('zb-h1'));
    expect(await card().locator('[data-mesh-oracle]').getAttribute('data-mesh-oracle')).toBe('pass');
    for (let i = 0; i < p; i++)
      expect(await view().locator(`g[data-stage="${i}"] rect[data-pass="weight"]`).count()).toBe(m * d);
    // The deferred W passes hold their backward's tensors on every stage, and the classes still equal the accounting.
    expect(await view().locator('p[data-stage-classes]').getAttribute('data-check')).toBe('pass');
    expect(await view().locator('g[data-stage-classes] path[data-class="deferredW"]').count()).toBe(p);
    console.log(
      `t ${t} × p ${p} × d ${d}, m ${m}, zb-h1: measured bubble ${b.measured.toFixed(3)}, formula ${b.formula.toFixed(3)}`,
    );
    expect(open.pageErrors).toEqual([]);
  });
});
