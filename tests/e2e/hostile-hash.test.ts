// Hostile URL hashes, each on a fresh page of the built app: the page stays responsive and names what is wrong.
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type OpenPage } from '../../scripts/device/browser-run.ts';
import { openE2ePage } from './built-page.ts';

let open: OpenPage;

/**
 * Each hash, what the page must say, and where: `field` is the control the message sits under
 * (`[data-error-for=field]` in <tp-controls>, <tp-machine-controls> or <tp-mesh-controls>), 'banner' the link banner for
 * keys without a control.
 */
const cases: readonly { hash: string; where: string; says: RegExp }[] = [
  {
    hash: 'h=1000000000001',
    where: 'h',
    says: /hidden size h \(1000000000001\) is more than the playground's maximum of 16777216/,
  },
  { hash: 's=1000000000', where: 's', says: /sequence length s \(1000000000\) is more than the playground's maximum/ },
  { hash: 'vocab=100000000', where: 'vocab', says: /vocabulary size \(100000000\) is more than/ },
  { hash: 'b=100000', where: 'b', says: /this run needs 5\.07 GiB: .* more than the page budget of .*; lower s/ },
  {
    hash: 's=100000',
    where: 's',
    says: /needs 149 GiB in one buffer, more than this adapter's maxStorageBufferBindingSize/,
  },
  { hash: 'ffn=10000000', where: 'ffn', says: /needs .* more than .*; lower (h or ffn|ffn)/ },
  { hash: 'heads=65536&groups=1', where: 'heads', says: /attention heads \(65536\) is more than the maximum of 65535/ },
  { hash: 'tp=99999999999999999999', where: 'tp', says: /tp must be a whole number ≥ 1, got "99999999999999999999"/ },
  { hash: 'constructor=1', where: 'banner', says: /^Link: unknown key "constructor" ignored/ },
  { hash: '__proto__=1', where: 'banner', says: /^Link: unknown key "__proto__" ignored/ },
  { hash: 'net=constructor', where: 'net', says: /unknown interconnect "constructor"/ },
  { hash: `h=${'9'.repeat(10_000)}`, where: 'h', says: /got "9{40}…" \(10000 characters\)/ },
  // Sized by the GPU count or the stages: capped (src/ui/settings/state.ts gpusCap, ppCap).
  { hash: 'gpus=10000000', where: 'gpus', says: /^gpus = 10000000 is more than 8192 \(.*\): write gpus=8192 or less/ },
  { hash: 'pp=1000000&gpus=1000000', where: 'pp', says: /^pp = 1000000 is more than 64 \(.*\): write pp=64 or less/ },
  // The rank mesh (src/ui/settings/state.ts dpCap, mCap; src/mesh/mesh-check.ts): refused at its control, nothing runs.
  { hash: 'dp=1000000', where: 'dp', says: /^dp = 1000000 is more than 16 \(.*\): write dp=16 or less/ },
  { hash: 'pp=2&m=1000000000', where: 'm', says: /^m = 1000000000 is more than 64 \(.*\): write m=64 or less/ },
  {
    hash: 'schedule=%3Cscript%3E',
    where: 'schedule',
    says: /^schedule must be one of afab, 1f1b, interleaved, zb-h1, got "<script>"/,
  },
  {
    hash: 'tp=4&pp=4&dp=2',
    where: 'dp',
    says: /^t × p × d = 4 × 4 × 2 = 32 rank workers, more than the 16 .* legal d at t = 4, p = 4: 1\./,
  },
  {
    hash: 'pp=2&layers=9',
    where: 'layers',
    says: /^L = 9 layers do not split over p = 2 stages .* Legal p at this L and v: 1, 3, 9;/,
  },
  {
    hash: 'pp=2&vpp=2&schedule=interleaved&m=3',
    where: 'm',
    says: /the interleaved schedule needs m to be a multiple of p = 2.* Legal m: 2, 4, 6, 8/,
  },
  { hash: 'dp=2&gbatch=7', where: 'm', says: /the global batch G = 7 sequences must be a multiple of b·d = 1·2 = 2/ },
  // The GPU budget's rule on G, at gbatch's control: it names the views it guards.
  {
    hash: 'gbatch=12',
    where: 'gbatch',
    says: /^The advisor, the machine picture and the overlap ablation split the global batch over the GPU budget N = 8 \(the cluster panel and the rank mesh take G = b·d·m instead\): gbatch \(12 sequences\) must be a multiple of b·DP = \d+ for every t of 1, 2, 4, 8 on the GPU budget/,
  },
  // Mixture of Experts (src/ui/settings/state.ts): capped or refused at its control, with what to write.
  { hash: 'experts=1000000', where: 'experts', says: /^experts = 1000000 is more than 256 \(DeepSeek-V3's/ },
  { hash: 'capacity=-1', where: 'capacity', says: /^capacity must be off \(dropless\) or a capacity factor > 0/ },
  { hash: 'experts=8&topk=9&ep=1', where: 'topk', says: /--moe-router-topk \(9\) .* Legal here: 1 to 8\./ },
  // The cluster panel's flags (src/ui/settings/state.ts cpCap; cluster-flags.ts): refused at their control in the machine panel.
  { hash: 'cp=10000000', where: 'cp', says: /^cp = 10000000 is more than 8192 \(t × p × cp × DP = N/ },
  { hash: 'fsdp=%3Cscript%3E', where: 'fsdp', says: /^fsdp must be one of off, .* got "<script>"/ },
  { hash: 'recompute=constructor', where: 'recompute', says: /^recompute must be one of none, selective, full/ },
  { hash: 'opg=1', where: 'opg', says: /^--overlap-param-gather needs --use-distributed-optimizer/ },
  { hash: 'fsdp=fsdp2&dtype=bf16&pp=2', where: 'fsdp', says: /--use-torch-fsdp2 .*arguments\.py:/ },
  // The cluster model (cluster-model-choice.ts, cluster-model.ts): refused or explained at the cmodel control; EP at its own.
  {
    hash: 'cmodel=hf:pasted',
    where: 'cmodel',
    says: /^cmodel=hf:pasted names a config\.json pasted in this tab, and this tab has none/,
  },
  { hash: 'cmodel=hf:%3Cscript%3E', where: 'cmodel', says: /^cmodel must be seeds-v100, .* got "hf:<script>"/ },
  { hash: `cmodel=hf:${'x'.repeat(10_000)}`, where: 'cmodel', says: /got "hf:x{37}…" \(10003 characters\)/ },
  {
    hash: 'cmodel=hf:deepseek-v3&ep=3',
    where: 'ep',
    says: /\(256 experts, EP 3\).* Legal here: EP 1, 2, 4, 8, 16, 32, 64 at ETP 1\./,
  },
  // The cluster's MoE flags (state.ts imbalanceMax, cluster-model.ts): hostile text refused at the control even with a
  // dense cluster model; Megatron's rules at the overlap's control; flex refused for the page's own MoE block.
  { hash: 'imb=1e9', where: 'imb', says: /^imb must be a number from 1 \(uniform routing\) to 64, got "1e9"/ },
  { hash: 'epov=%3Cscript%3E', where: 'epov', says: /^epov must be on or off/ },
  {
    hash: 'cmodel=hf:mixtral-8x7b-v0.1&ep=8&dispatcher=allgather&epov=1',
    where: 'epov',
    says: /alltoall\/flex token dispatcher\. .*Legal here: EP overlap off, or alltoall\/flex with EP > 1/,
  },
  {
    hash: 'experts=8&ep=2&tp=1&dispatcher=flex',
    where: 'dispatcher',
    says: /priced by the cluster panel only: the page's ranks run alltoall or allgather\. Legal here: alltoall, allgather/,
  },
  // Keys without a control of their own: named in the link banner.
  {
    hash: 'placement=nowhere',
    where: 'banner',
    says: /^Link: placement "nowhere": use megatron, .* or custom:<GPU list>/,
  },
  {
    hash: 'placement=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E',
    where: 'banner',
    says: /^Link: placement "<img src=x onerror=alert\(1\)>": use megatron, /,
  },
  {
    hash: 'view=classroom&step=-1',
    where: 'banner',
    says: /^Link: step must be a whole number ≥ 1, got "-1"\. Using step=1\./,
  },
  {
    hash: Array.from({ length: 200 }, (_, i) => `junk${i}=1`).join('&'),
    where: 'banner',
    says: /^Link: 200 unknown keys "junk0", .* and 192 more ignored/,
  },
];

/**
 * The page's JS heap in use (Chromium's `performance.memory`, quantized to 100 kB without the
 * precise-memory flag). A page that sized anything by the refused value would hold gigabytes (s = 10⁹
 * rows of fp32 alone is 4 GB): the bound below is far above the page's own working set (~30–60 MB)
 * and far below any such allocation.
 */
const heapBytes = (page: Page): Promise<number> =>
  page.evaluate(() => (performance as Performance & { memory: { usedJSHeapSize: number } }).memory.usedJSHeapSize);
const heapBound = 256 * 2 ** 20;

describe('hostile URL hashes on the built page', () => {
  beforeAll(async () => {
    open = await openE2ePage('about:blank'); // the browser and server only: every hash gets its own page
  }, 180_000);
  afterAll(async () => {
    await open?.close();
  });

  test.each(cases.map((c) => [c.hash.length > 60 ? `${c.hash.slice(0, 60)}… (${c.hash.length} chars)` : c.hash, c]))(
    '#%s: the page stays responsive, allocates nothing of that size and names the problem',
    async (_, { hash, where, says }) => {
      const page = await open.page.context().browser()!.newPage(); // a fresh context and page per hash
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      try {
        await page.goto(`${open.base}#machine=custom&${hash}`, { waitUntil: 'load' });
        const where$ =
          where === 'banner'
            ? page.locator('[data-banner="hash"]')
            : page.locator(`tp-controls, tp-machine-controls, tp-mesh-controls`).locator(`[data-error-for="${where}"]`);
        await expect.poll(() => where$.count(), { timeout: 20_000 }).toBeGreaterThan(0);
        const texts = await where$.allTextContents();
        expect(
          texts.some((t) => says.test(t.trim())),
          texts.join(' | ').slice(0, 600),
        ).toBe(true);
        if (where === 'banner') expect(texts).toHaveLength(1); // many unknown keys: one banner
        // Still responsive after it settled (a hung main thread would leave this evaluation to the test's
        // timeout), nothing sized by the refused value, nothing echoed whole (no page wider than the
        // window), no page error.
        expect(await page.evaluate(() => 1 + 1)).toBe(2);
        expect(await heapBytes(page)).toBeLessThan(heapBound);
        const [scroll, inner] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
        expect(scroll).toBeLessThanOrEqual(inner + 1);
        expect(errors).toEqual([]);
      } finally {
        await page.close();
      }
    },
    60_000,
  );
});
