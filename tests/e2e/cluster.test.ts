// The machine controls and the cluster panel end to end: the production build, driven through its controls.
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { waitShownRun } from './shown-run.ts';
import { type OpenPage } from '../../scripts/device/browser-run.ts';
import { openE2ePage } from './built-page.ts';

const runTimeout = 90_000;
let open: OpenPage;
let page: Page;

/** Waits until the page shows a finished run whose hash has every `key=value` of `parts`. */
const shownRun = (...parts: string[]): Promise<void> => waitShownRun(page, runTimeout, ...parts);

const caption = async (): Promise<string> => (await page.locator('tp-timeline .caption').textContent()) ?? '';
const machineControl = (name: string) => page.locator(`tp-machine-controls [data-control="${name}"]`);
const panel = () => page.locator('tp-cluster-panel');

describe('the machine choice and the cluster panel (built page)', () => {
  beforeAll(async () => {
    open = await openE2ePage('/#tp=2&cmodel=layer', { viewport: { width: 1280, height: 900 } });
    page = open.page;
  }, 180_000);
  afterAll(async () => {
    await open?.close();
  });

  test("a first visit shows a real cluster: the seeds' 8×V100 PCIe box in fp16, named in the caption with fp32 for the WebGPU run", async () => {
    await shownRun('tp=2');
    expect(await caption()).toMatch(
      /Machine: a real cluster \(8×V100 PCIe box, PCIe Gen3, fp16\) · compute: projected on V100 PCIe 32 GB in fp16.*WebGPU run itself is fp32.*Communication: projected on PCIe Gen3/,
    );
    expect(await page.locator('tp-timeline rect[data-kind="exposed"]').count()).toBeGreaterThan(0);
    // The rank workers still ran the layer: the oracle passed on this browser's adapter.
    expect(await page.locator('tp-oracle-badge .badge').getAttribute('data-pass')).toBe('true');
  });

  test("the cluster panel tabulates the mesh's layout over t with and without SP and draws four charts with the OOM line", async () => {
    const rows = panel().locator('table[data-cluster-table] tbody tr');
    await expect.poll(() => rows.count(), { timeout: runTimeout }).toBeGreaterThan(4);
    // the page's layer (cmodel=layer), classroom: 4 heads, so t = 1, 2, 4 run and t = 8 is named illegal.
    for (const t of [1, 2, 4])
      expect(await panel().locator(`tr[data-tp="${t}"][data-sp="false"] td[data-tokens]`).count()).toBe(1);
    expect(await panel().locator('tr[data-tp="8"][data-sp="false"]').textContent()).toMatch(/8.*(heads|divis)/);
    expect(await panel().locator('tr[data-tp="2"][data-sp="true"]').textContent()).toMatch(/tok\/s, .*mem/);
    for (const c of ['tokens', 'mfu', 'exposed', 'memory'])
      expect(await panel().locator(`svg[data-chart="${c}"] g[data-series] path`).count()).toBeGreaterThan(1);
    expect(await panel().locator('svg[data-chart="memory"] g[data-series^="capacity 32 GiB"]').count()).toBe(1);
    expect(await panel().locator('[data-cluster-caption]').textContent()).toMatch(/not a\s+measurement.*fp32/s);
  });

  test('the panel follows the layers and the GPU budget, and a format the GPU lacks is named by its control', async () => {
    await machineControl('layers').fill('24');
    await machineControl('layers').dispatchEvent('change');
    await expect.poll(() => page.evaluate(() => location.hash)).toContain('layers=24');
    await expect.poll(() => panel().locator('[data-cluster-caption]').textContent()).toMatch(/× 24 layers/);
    // --ddp-bucket-size: the number reaches the panel's command text as Megatron spells it.
    await machineControl('bucket').fill('1000000');
    await machineControl('bucket').dispatchEvent('change');
    await expect.poll(() => panel().locator('[data-cluster-flags]').textContent()).toMatch(/--ddp-bucket-size 1000000/);
    await machineControl('dtype').selectOption('bf16');
    await expect
      .poll(() => page.locator('tp-machine-controls [data-error-for="dtype"]').textContent())
      .toMatch(/V100 PCIe 32 GB has no bf16 tensor cores/);
    await machineControl('system').selectOption('dgx-a100');
    await shownRun('tp=2', 'system=dgx-a100', 'dtype=bf16');
    expect(await caption()).toMatch(
      /Machine: a real cluster \(DGX A100.*bf16\) · compute: projected on A100 SXM 80 GB in bf16/,
    );
    await expect.poll(() => panel().locator('[data-cluster-caption]').textContent()).toMatch(/DGX A100/);
    // The offload's tuning numbers show with --offload-modules; a value reaches the command text, one Megatron asserts against is named at its input.
    expect(await machineControl('offloadfrac').count()).toBe(0);
    await machineControl('offload').fill('core_attn');
    await machineControl('offload').dispatchEvent('change');
    await machineControl('offloadfrac').fill('0.5');
    await machineControl('offloadfrac').dispatchEvent('change');
    await expect
      .poll(() => panel().locator('[data-cluster-flags]').textContent())
      .toMatch(/--offload-modules core_attn.*--activation-offload-fraction 0\.5/s);
    await machineControl('offloadmin').fill('-1');
    await machineControl('offloadmin').dispatchEvent('change');
    await expect
      .poll(() => page.locator('tp-machine-controls [data-error-for="offloadmin"]').textContent())
      .toMatch(/min_offloaded_tensor_size must be non-negative.*1885-1887/);
  });

  test('this browser as the cluster measures compute and transport here; the mixed choice is labelled custom', async () => {
    await page.locator('tp-machine-controls input[data-control="machine"][value="browser"]').check();
    await shownRun('tp=2', 'machine=browser');
    expect(await caption()).toMatch(
      /Machine: this browser as the cluster · compute: measured on this machine's GPU.*Communication: measured: this browser's/,
    );
    await page.locator('tp-machine-controls input[data-control="machine"][value="custom"]').check();
    await shownRun('tp=2', 'machine=custom');
    expect(await caption()).toMatch(
      /Machine: custom: compute measured here, communication on a modeled link \(mixed\) · compute: measured.*Communication: modeled \(PCIe Gen3/,
    );
  });

  test('the GEMM view puts each local GEMM’s projected efficiency on the chosen GPU beside the measured one', async () => {
    await page.goto(new URL('/#tp=2&view=gemm&system=dgx-h100&dtype=bf16', open.base).href);
    const cell = (g: string, t: number) =>
      page.locator(`tp-gemm-view td[data-projected-gemm="${g}"][data-projected-t="${t}"]`);
    await expect.poll(() => cell('mlp.gate', 4).count(), { timeout: 170_000, interval: 500 }).toBe(1);
    expect((await page.locator('tp-gemm-view th').allTextContents()).join('|')).toMatch(
      /projected: % of H100 SXM 80 GB bf16 peak/,
    );
    const eff = async (t: number) => Number(await cell('mlp.gate', t).getAttribute('data-projected'));
    // Column-parallel: N/t shrinks, the projected fraction of peak falls (tiny shapes: launch-bound).
    expect(await eff(1)).toBeGreaterThan(await eff(4));
    expect(await eff(4)).toBeGreaterThan(0);
  });

  test('illegal or unknown machine values in the link are named beside their controls', async () => {
    await page.goto(new URL('/#tp=2&system=dgx-9&gpus=0&machine=cloud', open.base).href);
    const err = (f: string) => page.locator(`tp-machine-controls [data-error-for="${f}"]`);
    await expect.poll(() => err('system').textContent(), { timeout: runTimeout }).toMatch(/unknown system "dgx-9"/);
    expect(await err('gpus').textContent()).toMatch(/gpus must be a whole number ≥ 1/);
    expect(await err('machine').textContent()).toMatch(/machine must be one of cluster, browser, custom/);
    await shownRun('tp=2');
    expect(await caption()).toMatch(/Machine: a real cluster \(8×V100 PCIe/);
  });
  test('a TP group wider than a node is captioned on the network; the global batch is set and checked by its control', async () => {
    // 2 GPUs per node, t = 4: the TP group spans 2 nodes and the projection prices the network.
    await page.goto(new URL('/#tp=4&system=custom:v100-pcie:2:5:10&gbatch=16&cmodel=layer', open.base).href);
    await shownRun('tp=4');
    expect(await caption()).toMatch(
      /Communication: projected on 2× InfiniBand HDR .*: the TP group of 4 spans 2 nodes of 2 GPUs/,
    );
    // The panel projects the mesh's d and m (G = b·d·m): gbatch=16 at d = 1, m = 4 (classroom b = 1) is refused at m's control.
    const err = page.locator('tp-mesh-controls [data-error-for="m"]');
    await expect
      .poll(() => err.textContent(), { timeout: runTimeout })
      .toMatch(/the global batch G = 16 sequences is b·d·m .*m = 16, not 4: write m=16, or gbatch=4, or gbatch=auto/);
    await page.locator('tp-mesh-controls [data-control="m"]').fill('16');
    await page.locator('tp-mesh-controls [data-control="m"]').dispatchEvent('change');
    await expect.poll(() => page.evaluate(() => location.hash)).toContain('m=16');
    await expect.poll(() => err.count()).toBe(0);
    expect(await page.locator('[data-error-for="gbatch"]').count()).toBe(0);
    await expect
      .poll(() => panel().locator('[data-cluster-caption]').textContent())
      .toMatch(/d = 1 replicas of m = 16 micro-batches \(dp, m\), global batch b·d·m = 16 sequences/);
    // Every row runs the mesh's layout: DP = d = 1, m = 16 micro-batches.
    const cell = (n: number) => panel().locator(`tr[data-tp="1"][data-sp="false"] td:nth-child(${n})`).textContent();
    await expect.poll(() => cell(2)).toBe('1');
    await expect.poll(() => cell(3)).toBe('16');
  });
});
