// The pipeline schedule on the page end to end (built page): p = 4, v = 2 from the link, checked against the projection run here.
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type OpenPage } from '../../scripts/device/browser-run.ts';
import { parseSystem } from '../../src/hardware/systems.ts';
import { seedsV100 } from '../../src/megatron/scenarios.ts';
import { projectStep } from '../../src/projection/step/cluster-projection.ts';
import { openE2ePage } from './built-page.ts';

const runTimeout = 90_000;
let open: OpenPage;
let page: Page;

// The seeds' tiny GPT (the panel's default model) on the 8×V100 box, 16 layers (4 per stage, 2
// per chunk), p = 4, v = 2, the mesh's d = 1 and m = 8 micro-batches (a multiple of p, as the
// interleaved schedule needs): at the page's t = 2, N = t·p·d = 8 GPUs, G = b·d·m = 64.
const p = 4;
const v = 2;
const m = 8;
const hash = `#tp=2&layers=16&pp=${p}&vpp=${v}&schedule=interleaved&m=${m}`;

const view = () => page.locator('tp-cluster-panel tp-pipeline-view');

describe('the pipeline schedule for p = 4, v = 2 (built page)', () => {
  beforeAll(async () => {
    open = await openE2ePage(`/${hash}`, { viewport: { width: 1280, height: 800 } });
    page = open.page;
  }, 180_000);
  afterAll(async () => {
    await open?.close();
  });

  test('every stage draws m·v forward and m·v backward blocks, both chunks, the bubble and the p2p arrows', async () => {
    await expect
      .poll(() => view().locator('rect[data-kind="block"]').count(), { timeout: runTimeout })
      .toBe(p * 2 * m * v);
    for (let i = 0; i < p; i++) {
      const stage = view().locator(`g[data-stage="${i}"]`);
      expect(await stage.locator('rect[data-pass="forward"]').count()).toBe(m * v);
      expect(await stage.locator('rect[data-pass="backward"]').count()).toBe(m * v);
      for (let c = 0; c < v; c++)
        expect(await stage.locator(`rect[data-pass="forward"][data-chunk="${c}"]`).count()).toBe(m);
    }
    // The bubble: warm-up and cool-down idle on every stage but where the schedule keeps it busy.
    expect(await view().locator('rect[data-kind="bubble"]').count()).toBeGreaterThan(0);
    // One p2p send per (virtual-stage boundary, micro-batch, pass): 2·m·(p·v − 1).
    expect(await view().locator('line[data-kind="p2p"]').count()).toBe(2 * m * (p * v - 1));
    expect(await view().locator('[data-pipeline-caption]').textContent()).toMatch(/interleaved schedule/);
  });

  test("the bubble share shown is the projection's, computed here for the same setup", async () => {
    const step = await projectStep(
      { ...seedsV100.setup, layers: 16, tp: 2, pp: p, vpp: v },
      { system: parseSystem(seedsV100.system), dtype: seedsV100.dtype },
    );
    expect(step.microBatches).toBe(m);
    const shown = Number(await view().locator('[data-bubble-share]').getAttribute('data-bubble-share'));
    expect(shown).toBe(step.bubbleShare);
    expect(await view().locator('[data-bubble-share]').textContent()).toBe(`${(100 * step.bubbleShare).toFixed(1)}%`);
    // Interleaving with equal stages: close to (p − 1)/(v·m + p − 1) = 3/19 (the end stages carry the embedding and output, so not equal).
    expect(step.bubbleShare).toBeGreaterThan(0.1);
    expect(step.bubbleShare).toBeLessThan(0.3);
  });

  test("clicking a stage shows its TP lanes below (t = 2: two ranks' lanes)", async () => {
    expect(await view().locator('tp-timeline').count()).toBe(0);
    await view().locator('g[data-stage="1"]').click();
    await expect.poll(() => view().locator('[data-stage-lanes="1"]').count()).toBe(1);
    await expect.poll(() => view().locator('tp-timeline g[data-lane="compute"]').count()).toBe(2);
    expect(await view().locator('tp-timeline rect[data-kind="compute"]').count()).toBeGreaterThan(0);
    await view().locator('button[data-stage-button="3"]').click();
    await expect.poll(() => view().locator('[data-stage-lanes="3"]').textContent()).toMatch(/Stage 3/);
    expect(open.pageErrors).toEqual([]);
  });

  // The cluster panel's kernel switches (settings rows arch, attn, fp8, graphs) on the same page.
  test('the kernel switches reach the panel: GPT named in the caption, FlashAttention refused on V100 per row, the cross entropy priced, the optimizer offload named and refused there', async () => {
    const control = (name: string) => page.locator(`tp-machine-controls [data-control="${name}"]`);
    const caption = page.locator('tp-cluster-panel [data-cluster-caption]');
    await control('layerArch').selectOption('gpt');
    await expect.poll(() => page.evaluate(() => location.hash)).toContain('arch=gpt');
    await expect.poll(() => caption.textContent()).toMatch(/kernels --arch gpt;/);
    await control('attn').selectOption('flash');
    await expect
      .poll(() => page.locator('tp-cluster-panel tr[data-tp="2"][data-sp="false"]').textContent())
      .toMatch(/FlashAttention needs an Ampere or newer GPU/);
    await control('attn').selectOption('unfused');
    await expect
      .poll(() => page.locator('tp-cluster-panel tr[data-tp="2"][data-sp="false"] td[data-tokens]').count())
      .toBe(1);
    // CUDA graphs' static buffers (cuda-graph-memory.ts) move the row's memory per GPU.
    const memory = async () =>
      Number(
        await page
          .locator('tp-cluster-panel tr[data-tp="2"][data-sp="false"] td[data-memory-bytes]')
          .getAttribute('data-memory-bytes'),
      );
    const eager = await memory();
    await control('graphs').selectOption('transformer_engine');
    await expect.poll(memory).toBeGreaterThan(eager);
    // The scope mlp keeps no attention mask (cuda-graph-memory.ts): less than the whole layer, in the command text.
    const whole = await memory();
    await control('gscope').fill('mlp');
    await control('gscope').dispatchEvent('change');
    await expect.poll(() => page.evaluate(() => location.hash)).toContain('gscope=mlp');
    await expect.poll(memory).toBeLessThan(whole);
    await expect
      .poll(() => caption.textContent())
      .toMatch(/--cuda-graph-impl transformer_engine --cuda-graph-modules mlp;/);
    await control('graphs').selectOption('none');
    await expect.poll(memory).toBe(eager);
    // --cross-entropy (ce): Megatron's unfused fp32 loss reads and writes more bytes per logit than the plan's, so the row's tokens/s drop.
    const tokens = async () =>
      Number(
        await page
          .locator('tp-cluster-panel tr[data-tp="2"][data-sp="false"] td[data-tokens]')
          .getAttribute('data-tokens'),
      );
    const planTokens = await tokens();
    await control('ce').selectOption('megatron');
    await expect.poll(() => caption.textContent()).toMatch(/--cross-entropy megatron;/);
    await expect.poll(tokens).toBeLessThan(planTokens);
    await control('ce').selectOption('plan');
    await expect.poll(tokens).toBe(planTokens);
    // --optimizer-cpu-offload (cpuoffload) reaches every row: named in the flags, refused on the seeds' box (no known host).
    const row = page.locator('tp-cluster-panel tr[data-tp="2"][data-sp="false"]');
    await control('cpuoffload').fill('0.5');
    await control('cpuoffload').press('Enter');
    await expect.poll(() => page.evaluate(() => location.hash)).toContain('cpuoffload=0.5');
    await expect
      .poll(() => page.locator('tp-cluster-panel [data-cluster-flags]').textContent())
      .toMatch(/--optimizer-cpu-offload --use-precision-aware-optimizer --optimizer-offload-fraction 0\.5/);
    await expect.poll(() => row.textContent()).toMatch(/has no host link or CPU memory figures/);
    await control('cpuoffload').fill('off');
    await control('cpuoffload').press('Enter');
    await expect.poll(memory).toBe(eager);
    expect(open.pageErrors).toEqual([]);
  });
});
