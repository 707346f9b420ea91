// The page end to end: the production build served by `vite preview` (COOP/COEP), driven through its controls.
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { memorySnapshotScriptName } from '../../src/megatron/memory-snapshot-script.ts';
import { jobManifestFile, manifestProjection, readJobManifest } from '../../src/megatron/job-manifest.ts';
import type { BrowserContext, Page } from 'playwright';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { waitShownRun } from './shown-run.ts';
import type { OpenPage } from '../../scripts/device/browser-run.ts';
import { openE2ePage } from './built-page.ts';
import { parseCsv, timelineCsvHeader } from '../../src/export/csv.ts';
import { partialOverlaps, type PerfettoTrace } from '../../src/export/perfetto.ts';

// A fresh t = 8 run (8 rank workers, the TP = 1 reference, GEMM tuning) takes 20–60 s on two busy cores.
const runTimeout = 120_000;
const viewport = { width: 1280, height: 800 };
/** The built server and its browser, shared by every test. */
let open: OpenPage;
/** The current test's own page, opened by `openAt`. */
let page: Page;
let pageErrors: string[] = [];
/** The browser context `openAt` opened for the running test, closed after it. */
let opened: BrowserContext | undefined;

/** A fresh browser context in the shared browser (downloads on, 1280×800). */
const freshContext = (): Promise<BrowserContext> =>
  open.page.context().browser()!.newContext({ acceptDownloads: true, viewport });

/**
 * Opens a fresh page at `hash` in a fresh browser context and waits for its first finished run, so a
 * test depends on no state left by another.
 */
async function openAt(hash: string, ...shown: string[]): Promise<void> {
  opened = await freshContext();
  page = await opened.newPage();
  pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(new URL(`/${hash}`, open.base).href);
  await shownRun(...shown);
}

/** Waits until the page shows a finished run whose hash has every `key=value` of `parts`. */
const shownRun = (...parts: string[]): Promise<void> => waitShownRun(page, runTimeout, ...parts);

const lanes = (kind: 'compute' | 'comm') => page.locator(`tp-timeline g[data-lane="${kind}"]`);
const blocks = (kind: 'compute' | 'comm' | 'exposed') => page.locator(`tp-timeline rect[data-kind="${kind}"]`);
const badge = () => page.locator('tp-oracle-badge .badge');

/** The tooltip of the first forward block of `op` on rank 0's comm lane. */
async function commTooltip(op: string): Promise<string> {
  // The pointer event goes to the block itself: at t = 8 a collective can be a pixel wide and sit under
  // its neighbour's exposed overlay, so hovering its centre would hit-test the neighbour.
  const block = page
    .locator(
      `tp-timeline g[data-lane="comm"][data-rank="0"] rect[data-kind="comm"][data-op="${op}"][data-phase="forward"]`,
    )
    .first();
  const box = await block.boundingBox();
  if (!box) throw new Error(`commTooltip: the ${op} block has no layout box.`);
  await block.dispatchEvent('pointermove', {
    clientX: box.x + box.width / 2,
    clientY: box.y + box.height / 2,
    pointerType: 'mouse',
  });
  const tip = page.locator('tp-timeline .tip');
  await expect.poll(() => tip.isVisible()).toBe(true);
  return (await tip.textContent()) ?? '';
}

async function expectRanks(t: number): Promise<void> {
  expect(await lanes('compute').count()).toBe(t);
  expect(await lanes('comm').count()).toBe(t);
  const ranks = await lanes('compute').evaluateAll((gs) => gs.map((g) => g.getAttribute('data-rank')));
  expect(ranks).toEqual(Array.from({ length: t }, (_, r) => String(r)));
  expect(await badge().getAttribute('data-pass')).toBe('true');
}

describe('the playground page (built, served locally)', () => {
  beforeAll(async () => {
    // A blank first page: every test opens its own with `openAt`.
    open = await openE2ePage('about:blank', { viewport });
  }, 120_000);
  afterEach(async () => {
    await opened?.close();
    opened = undefined;
    // An uncaught error in a test's page fails that test (and only that one).
    const errors = pageErrors;
    pageErrors = [];
    expect(errors).toEqual([]);
  });
  afterAll(async () => {
    await open?.close();
  });

  // These tests walk one page (a fresh t = 8 run costs 20–60 s here): from TP 1 through the TP control to
  // 2, 4 and, with 8 heads, 8, then SP on; each test starts where the one before left the page, and
  // from the exports on each leaves the settings as it found them (t = 8, SP); the resizes come last.
  describe('one page walked from TP 1 to TP 8 with SP, each test starting where the last left it', () => {
    let shared: BrowserContext | undefined;
    beforeAll(async () => {
      await openAt('#tp=1&machine=custom', 'tp=1');
      shared = opened;
      opened = undefined; // kept open across this block's tests; closed in its afterAll
    }, runTimeout);
    afterAll(async () => {
      await shared?.close();
    });

    test('#tp=1 shows one rank’s lanes, no exposed communication on modeled PCIe, and a passing oracle', async () => {
      await shownRun('tp=1', 'net=pcie-gen3');
      await expectRanks(1);
      expect(await blocks('compute').count()).toBeGreaterThan(10);
      expect(await blocks('exposed').count()).toBe(0);
      expect(await page.locator('tp-timeline .caption').textContent()).toMatch(
        /compute: measured on this machine's GPU.*Communication: modeled \(PCIe Gen3/,
      );
    });

    test.each([2, 4])(
      'choosing TP %i in the TP control redraws that many ranks’ lanes with exposed communication and a passing oracle',
      async (t) => {
        await page.locator('tp-controls select[data-control="tp"]').selectOption(String(t));
        await shownRun(`tp=${t}`);
        await expectRanks(t);
        expect(await blocks('exposed').count()).toBeGreaterThan(0);
        expect(await page.evaluate(() => location.hash)).toContain(`tp=${t}&`);
      },
    );

    test('after raising heads to 8, TP 8 runs with eight ranks’ lanes, exposed communication and a passing oracle', async () => {
      await shownRun('tp=4');
      await page.locator('tp-controls input[data-control="heads"]').fill('8');
      await page.locator('tp-controls input[data-control="heads"]').dispatchEvent('change');
      await shownRun('heads=8', 'tp=4');
      await page.locator('tp-controls select[data-control="tp"]').selectOption('8');
      await shownRun('heads=8', 'tp=8');
      await expectRanks(8);
      expect(await blocks('exposed').count()).toBeGreaterThan(0);
    });

    test('sequence parallel replaces the forward all-reduces by reduce-scatter and all-gather', async () => {
      await shownRun('tp=8', 'heads=8', 'sp=0');
      expect(await commTooltip('attn.reduce')).toMatch(/all-reduce over 8 ranks/);
      expect(await page.locator('tp-timeline rect[data-op="ln1.gather"]').count()).toBe(0);
      await page.locator('tp-controls input[data-control="sp"]').click();
      await shownRun('tp=8', 'sp=1');
      expect(await commTooltip('attn.reduce')).toMatch(/reduce-scatter over 8 ranks/);
      expect(await commTooltip('ln1.gather')).toMatch(/all-gather over 8 ranks/);
      const forwardOps = await page
        .locator('tp-timeline rect[data-kind="comm"][data-phase="forward"]')
        .evaluateAll((rs) => rs.map((r) => r.getAttribute('data-op')));
      // Only the vocab-parallel loss keeps its (tiny) all-reduces forward; the [s,b,h] reductions are gone.
      expect(forwardOps.filter((op) => op === 'attn.reduce' || op === 'mlp.reduce')).toHaveLength(16);
      await expectRanks(8);
    });

    test('the Perfetto export parses and holds one process per rank whose slices never partially overlap on one thread', async () => {
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.locator('tp-exports button[data-export="perfetto"]').click(),
      ]);
      expect(download.suggestedFilename()).toBe('tp-t8-sp-classroom.json');
      const trace = JSON.parse(await readFile((await download.path())!, 'utf8')) as PerfettoTrace;
      const processes = trace.traceEvents.filter((e) => e.ph === 'M' && e.name === 'process_name');
      expect(new Set(processes.map((e) => e.pid)).size).toBe(8);
      expect(trace.traceEvents.filter((e) => e.ph === 'X').length).toBeGreaterThan(8 * 40);
      expect(partialOverlaps(trace)).toEqual([]);
    });

    test('the CSV export holds the header and one row per op per rank', async () => {
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.locator('tp-exports button[data-export="csv"]').click(),
      ]);
      expect(download.suggestedFilename()).toBe('tp-t8-sp-classroom.csv');
      const rows = parseCsv(await readFile((await download.path())!, 'utf8'));
      expect(rows[0]).toEqual([...timelineCsvHeader]);
      const ranks = new Set(rows.slice(1).map((r) => r[0]));
      expect(ranks).toEqual(new Set(['0', '1', '2', '3', '4', '5', '6', '7']));
      expect((rows.length - 1) % 8).toBe(0);
      const [op, pass, collective] = ['op', 'pass', 'collective'].map((c) => rows[0].indexOf(c));
      expect(rows.filter((r) => r[op] === 'attn.reduce' && r[pass] === 'forward').map((r) => r[collective])).toEqual(
        Array(8).fill('reduceScatter'),
      );
    });

    test('the Megatron-LM arguments match the run', async () => {
      const args = (await page.locator('tp-exports pre[data-export="megatron"]').textContent()) ?? '';
      expect(args).toContain('--tensor-model-parallel-size 8');
      expect(args).toContain('--sequence-parallel');
      expect(args).toContain('--num-attention-heads 8');
      expect(args).toContain('--num-query-groups 2');
    });

    test("the job bundle is refused on the V100 box with SP, and on H100 downloads as a tar of the cluster panel's setup whose manifest reads back", async () => {
      // Transformer Engine's CUDA 13 builds start at sm_75; SP needs its spec (src/megatron/job-bundle.ts).
      await page.locator('tp-exports button[data-export="job-bundle"]').click();
      expect(await page.locator('tp-exports [data-export="job-error"]').textContent()).toMatch(
        /cannot run this job: sequence parallelism needs the Transformer Engine spec.*sm_75/,
      );
      await page.locator('tp-machine-controls select[data-control="system"]').selectOption('dgx-h100');
      await shownRun('tp=8', 'sp=1', 'system=dgx-h100');
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.locator('tp-exports button[data-export="job-bundle"]').click(),
      ]);
      expect(download.suggestedFilename()).toMatch(/^tp-t8-sp-classroom-\d+gpu\.tar$/);
      const tar = (await download.path())!;
      const root = download.suggestedFilename().replace(/\.tar$/, '');
      expect(execFileSync('tar', ['-tf', tar], { encoding: 'utf8' }).trim().split('\n')).toEqual(
        [
          '',
          'README.md',
          jobManifestFile,
          'setup.sh',
          'env.sh',
          'args.sh',
          'launch.sh',
          'job.sbatch',
          memorySnapshotScriptName,
        ].map((f) => `${root}/${f}`),
      );
      const manifest = readJobManifest(
        execFileSync('tar', ['-xOf', tar, `${root}/${jobManifestFile}`], { encoding: 'utf8' }),
      );
      const { parsed } = manifestProjection(manifest);
      expect(parsed.setup).toMatchObject({ tp: 8, sp: true });
      expect(manifest.command).toContain('--transformer-impl transformer_engine');
      expect(manifest.system).toBe('dgx-h100');
      expect(await page.locator('tp-exports [data-export="job-error"]').count()).toBe(0);
      // Back to the seeds' box for the tests after this one.
      await page.locator('tp-machine-controls select[data-control="system"]').selectOption('v100-pcie-8');
      await page.waitForFunction(() => !location.hash.includes('system='));
      await shownRun('tp=8', 'sp=1');
    });

    test('turning the dgrad all-reduce overlap off makes the exposed communication grow, and on again shrinks it', async () => {
      const exposedMs = async () =>
        Number(await page.locator('tp-app .totals [data-exposed-ms]').getAttribute('data-exposed-ms'));
      const on = await exposedMs();
      await page.locator('tp-controls input[data-control="overlap"]').click();
      await shownRun('tp=8', 'sp=1', 'overlap=0');
      const off = await exposedMs();
      expect(off).toBeGreaterThan(on);
      await page.locator('tp-controls input[data-control="overlap"]').click();
      await shownRun('tp=8', 'sp=1', 'overlap=1');
      expect(await exposedMs()).toBeLessThan(off);
    });

    test('an illegal degree shows its message next to the TP control and keeps the last view', async () => {
      const input = page.locator('tp-controls input[data-control="tp-number"]');
      await input.fill('3');
      await input.dispatchEvent('change');
      const msg = page.locator('tp-controls [data-error-for="tp"]');
      await expect
        .poll(() => msg.first().textContent(), { timeout: 10_000 })
        .toMatch(/heads \(8\) must be divisible by the TP degree t = 3.*legal t for 8 heads are 1, 2, 4, 8/);
      // The message sits in the TP fieldset, beside the control that caused it.
      expect(await msg.first().evaluate((el) => el.closest('fieldset')?.querySelector('legend')?.textContent)).toBe(
        'Tensor parallel',
      );
      expect(await page.evaluate(() => location.hash)).toContain('tp=3&');
      expect(await page.locator('tp-app').getAttribute('data-shown')).toContain('tp=8&');
      await expectRanks(8);
      await expect.poll(() => page.locator('[data-banner="stale"]').count()).toBe(1);
      await page.locator('tp-controls select[data-control="tp"]').selectOption('8');
      await expect.poll(() => msg.count()).toBe(0);
      await shownRun('tp=8', 'heads=8', 'sp=1'); // back where the block's next test expects it
      await expectRanks(8);
    });

    test('the SP norm-gradient skip switch makes the oracle badge fail on exactly the norm weights (seed 002 M035)', async () => {
      expect(await badge().getAttribute('data-pass')).toBe('true');
      await page.locator('tp-controls input[data-control="skipnorm"]').check();
      await shownRun('tp=8', 'sp=1', 'skipnorm=1');
      expect(await badge().getAttribute('data-pass')).toBe('false');
      const failed = await page
        .locator('tp-oracle-badge tr.fail[data-tensor]')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-tensor')));
      expect(failed).toEqual(['dg1', 'dg2']);
      await page.locator('tp-controls input[data-control="skipnorm"]').uncheck();
      await page.waitForFunction(
        () => !(document.querySelector('tp-app')?.dataset.shown ?? '').includes('skipnorm'),
        undefined,
        { timeout: runTimeout },
      );
      await shownRun('tp=8', 'sp=1');
      expect(await badge().getAttribute('data-pass')).toBe('true');
    });

    test.each([
      [1280, 800],
      [1920, 1080],
    ])('the page fits %i×%i without horizontal scrolling (screenshot kept in test-results/)', async (width, height) => {
      await page.setViewportSize({ width, height });
      await page.evaluate(() => window.scrollTo(0, 0));
      // The timeline redraws on resize: poll until the page has settled at the new width.
      const overflow = (): Promise<number> =>
        page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      await expect.poll(overflow, { timeout: 10_000 }).toBeLessThanOrEqual(0);
      await expect
        .poll(
          async () => {
            const svg = await page.locator('tp-timeline svg.plot').boundingBox();
            return svg ? svg.x + svg.width : Infinity;
          },
          { timeout: 10_000 },
        )
        .toBeLessThanOrEqual(width);
      await page.screenshot({ path: `test-results/page-${width}x${height}.png` });
      await page.screenshot({ path: `test-results/page-${width}x${height}-full.png`, fullPage: true });
      expect(pageErrors).toEqual([]);
    });
  });

  test('without cross-origin isolation the page says it runs on MessagePort, and the run still passes the oracle', async () => {
    const context = await freshContext();
    // The same server, with COOP/COEP stripped from every response.
    await context.route('**/*', async (route) => {
      const response = await route.fetch();
      const headers = { ...response.headers() };
      delete headers['cross-origin-opener-policy'];
      delete headers['cross-origin-embedder-policy'];
      await route.fulfill({ response, headers });
    });
    const plain = await context.newPage();
    try {
      await plain.goto(new URL('/#tp=2', open.base).href);
      await plain.waitForFunction(() => document.querySelector('tp-app')?.dataset.shown?.includes('tp=2&'), null, {
        timeout: runTimeout,
      });
      expect(await plain.evaluate(() => crossOriginIsolated)).toBe(false);
      expect(await plain.locator('[data-banner="message-port"]').textContent()).toMatch(
        /not cross-origin isolated.*MessagePort/,
      );
      expect(await plain.locator('[data-source="transport"]').textContent()).toMatch(/MessagePort ring/);
      expect(await plain.locator('tp-oracle-badge .badge').getAttribute('data-pass')).toBe('true');
    } finally {
      // Workers may still be fetching when the test ends: a handler then fulfils a disposed response.
      await context.unrouteAll({ behavior: 'ignoreErrors' });
      await context.close();
    }
  });

  test.each([
    [
      'no navigator.gpu',
      'This browser exposes no WebGPU',
      () => Object.defineProperty(Navigator.prototype, 'gpu', { get: () => undefined }),
    ],
    [
      'an adapter request that returns null',
      'WebGPU is present but no adapter was found',
      () => (GPU.prototype.requestAdapter = async () => null),
    ],
  ] as const)(
    'without WebGPU (%s) the page says so and how to enable it, and still shows the plan, shapes and a modeled timeline; a bad link is named, not blank',
    async (_, says, hide) => {
      const context = await freshContext();
      const bare = await context.newPage();
      try {
        await bare.addInitScript(hide);
        await bare.goto(new URL('/#tp=4&colour=red&pass=sideways', open.base).href);
        await bare.waitForFunction(() => document.querySelector('tp-app')?.dataset.shown?.includes('tp=4&'), null, {
          timeout: runTimeout,
        });
        expect(await bare.locator('[data-banner="no-webgpu"]').textContent()).toMatch(
          new RegExp(`${says}.*--enable-unsafe-webgpu`),
        );
        expect(await bare.locator('tp-timeline g[data-lane="compute"]').count()).toBe(4);
        expect(await bare.locator('tp-timeline rect[data-kind="exposed"]').count()).toBeGreaterThan(0);
        expect(await bare.locator('tp-timeline .caption').textContent()).toMatch(
          /compute: projected on V100 PCIe 32 GB in fp16/,
        );
        expect(await bare.locator('tp-oracle-badge .badge').getAttribute('data-pass')).toBe('none');
        expect(
          await bare.locator('tp-shapes table[data-section="boundaries"] tr[data-layout]').count(),
        ).toBeGreaterThan(5);
        expect(await bare.locator('[data-banner="hash"]').textContent()).toMatch(/unknown key "colour" ignored/);
        expect(await bare.locator('tp-controls [data-error-for="pass"]').textContent()).toMatch(
          /pass must be one of forward, backward, both, got "sideways"\. Using pass=both\./,
        );
      } finally {
        await context.close();
      }
    },
  );
});
