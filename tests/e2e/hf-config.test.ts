// A Mixtral-shaped config.json pasted on the built page: the cluster panel prices its experts at the page's EP,
// the advisor searches EP and ETP, and applying a row sets them; the pasted config stays in its tab only.
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type OpenPage } from '../../scripts/device/browser-run.ts';
import { openE2ePage } from './built-page.ts';
import { waitShownRun } from './shown-run.ts';

const runTimeout = 90_000;
let open: OpenPage;
let page: Page;

/**
 * Mixtral 8x7B's widths (h 4096, 32 heads, 8 KV groups, experts of FFN 14336, 8 experts top-2) over 8 layers
 * instead of 32, so the advisor's 580,608 candidates on 8 GPUs take seconds; one field the reader does not know.
 * On 8 H100s with the page's default alltoall dispatcher the fastest layout is EP 8, ETP 1, t 1 (npm run project --
 * --hf-config FILE --system dgx-h100 --gpus 8 --search --moe-token-dispatcher-type alltoall: 1.16 s, 60.8% MFU;
 * with the CLI's default allgather it is EP 2).
 */
const config = JSON.stringify({
  architectures: ['MixtralForCausalLM'],
  model_type: 'mixtral',
  hidden_size: 4096,
  intermediate_size: 14336,
  num_hidden_layers: 8,
  num_attention_heads: 32,
  num_key_value_heads: 8,
  num_local_experts: 8,
  num_experts_per_tok: 2,
  vocab_size: 32000,
  max_position_embeddings: 32768,
  rope_theta: 1e6,
  hidden_act: 'silu',
  tie_word_embeddings: false,
  my_router_field: 1,
});

const controls = () => page.locator('tp-machine-controls');
const cluster = () => page.locator('tp-cluster-panel');
const advisor = () => page.locator('tp-advisor-panel');
const hash = (): Promise<string> => page.evaluate(() => location.hash);
/** The panel's MoE words as E:k:EP:ETP. */
const moeOf = () => cluster().locator('[data-cluster-moe]').getAttribute('data-cluster-moe');
const tokensAt = async (tp: number, sp: boolean): Promise<number> => {
  const cell = cluster().locator(`tr[data-tp="${tp}"][data-sp="${sp}"] td[data-tokens]`);
  await expect.poll(() => cell.count(), { timeout: runTimeout }).toBe(1);
  return Number(await cell.getAttribute('data-tokens'));
};

describe('a config.json pasted on the page (built page)', () => {
  beforeAll(async () => {
    open = await openE2ePage('/#tp=2&system=dgx-h100&etp=2', { viewport: { width: 1280, height: 800 } });
    page = open.page;
  }, 180_000);
  afterAll(async () => {
    await open?.close();
  });

  test('pasted, it becomes the cluster model: its experts at the page’s EP, its unknown field named, s and b sourced', async () => {
    await waitShownRun(page, runTimeout, 'tp=2');
    // A file over the cap is refused by its size before it is read (pasted-hf-config.ts pastedConfigMaxChars; a
    // 10 MB paste in tests/unit/ui/settings/cluster-model.test.ts; 1 MiB here, as sending 10 MB to the browser takes ~30 s).
    await controls()
      .locator('input[data-control="hf-config-file"]')
      .setInputFiles({ name: 'config.json', mimeType: 'application/json', buffer: Buffer.alloc(2 ** 20, 32) });
    await expect
      .poll(() => controls().locator('[data-error-for="cmodel"]').textContent())
      .toMatch(/the file "config\.json" has 1,048,576 characters, more than the 65,536 taken here/);
    expect(await hash()).not.toContain('cmodel=');
    const area = controls().locator('textarea[data-control="hf-config"]');
    await area.fill('{"hidden_size": 4096');
    await area.dispatchEvent('change');
    await expect
      .poll(() => controls().locator('[data-error-for="cmodel"]').textContent())
      .toMatch(/config\.json: config\.json is not JSON .*paste the file's text as it is/);
    await area.fill(config);
    await area.dispatchEvent('change');
    await expect.poll(hash).toContain('cmodel=hf:pasted');
    await expect.poll(moeOf, { timeout: runTimeout }).toBe('8:2:1:2');
    expect(await controls().locator('[data-note-for="hf-unknown"]').textContent()).toMatch(/"my_router_field"/);
    expect(await controls().locator('[data-note-for="hf-defaults"]').textContent()).toMatch(
      /L 8 from its num_hidden_layers; s 4096 and b 1 from Megatron-LM core_v0\.19\.0 examples\/mixtral/,
    );
    expect(await cluster().locator('[data-cluster-caption]').textContent()).toMatch(/× 8 layers/);
    // MoE with t > 1 needs SP (moe_layer.py:629-632): the rows without it say so; the SP rows are priced.
    await expect
      .poll(() => cluster().locator('tr[data-tp="2"][data-sp="false"]').textContent(), { timeout: runTimeout })
      .toMatch(/sequence parallelism/);
    // Each row on its own t·p·cp·d GPUs (d = 1 here): t = 8 with SP holds ETP·EP = 8 of them.
    const ep1 = await tokensAt(8, true);

    const ep = controls().locator('input[data-control="cluster-ep"]');
    await ep.fill('3');
    await ep.dispatchEvent('change');
    await expect
      .poll(() => controls().locator('[data-error-for="ep"]').first().textContent())
      .toMatch(/multiple of expert model parallel_size \(8 experts, EP 3\).*Legal here: EP 1, 2, 4, 8 at ETP 2\./);
    await ep.fill('4');
    await ep.dispatchEvent('change');
    await expect.poll(hash).toContain('ep=4');
    await expect.poll(moeOf, { timeout: runTimeout }).toBe('8:2:4:2');
    // EP 4 puts two experts a rank instead of eight: another step, priced through the same projection as the CLI.
    await expect.poll(() => tokensAt(8, true), { timeout: runTimeout }).not.toBe(ep1);
    // The cluster's MoE flags: the page's dispatcher (alltoall) and the EP overlap, in the panel's words as Megatron's flags.
    const words = () => cluster().locator('[data-cluster-moe]').textContent();
    expect(await words()).toMatch(/--moe-token-dispatcher-type alltoall /);
    await controls().locator('input[data-control="epov"]').check();
    await expect.poll(hash).toContain('epov=1');
    await expect.poll(words, { timeout: runTimeout }).toMatch(/--overlap-moe-expert-parallel-comm/);
    await controls().locator('input[data-control="epov"]').uncheck();
    await expect.poll(hash).not.toContain('epov=');
    // Padding to capacity: refused at its switch without a capacity factor (transformer_config.py:1686-1690), priced and written with one.
    const pad = controls().locator('input[data-control="pad"]');
    await pad.check();
    await expect.poll(hash).toContain('pad=1');
    await expect
      .poll(() => controls().locator('[data-error-for="pad"]').first().textContent())
      .toMatch(/moe_expert_capacity_factor must be set .*Legal here: padding off, or a capacity factor/);
    const cf = controls().locator('input[data-control="cluster-capacity"]');
    await cf.fill('1.25');
    await cf.dispatchEvent('change');
    await expect
      .poll(words, { timeout: runTimeout })
      .toMatch(/--moe-expert-capacity-factor 1\.25 --moe-pad-expert-input-to-capacity/);
    expect(await controls().locator('[data-error-for="pad"]').count()).toBe(0);
    await pad.uncheck();
    await cf.fill('off');
    await cf.dispatchEvent('change');
    await expect.poll(hash).not.toMatch(/pad=|capacity=/);
  });

  test("the advisor searches EP and ETP for it, and applying its fastest row sets the row's EP and ETP", async () => {
    await advisor().locator('button[data-advisor-search]').click();
    const first = advisor().locator('table[data-advisor-table] tbody tr[data-rank="1"]');
    await expect.poll(() => first.count(), { timeout: 180_000, interval: 250 }).toBe(1);
    // 387,072 layouts × 4/3 × 9/8: the advisor tries core_attn, core_attn moe_act and core_attn moe for an MoE model,
    // and Megatron-FSDP optim_grads_params beside DDP (one of the 8 optimizer and overlap combinations).
    expect(await advisor().locator('[data-advisor-summary]').textContent()).toMatch(/580,608 candidates/);
    expect([await first.getAttribute('data-ep'), await first.getAttribute('data-etp')]).toEqual(['8', '1']);
    // ETP equal to t is Megatron's default and not written (parallel-layout.ts layoutFlags).
    expect(await first.locator('td.flags').textContent()).toMatch(
      /--tensor-model-parallel-size 1 .*--expert-model-parallel-size 8$/,
    );
    expect(await first.locator('button[data-apply]').getAttribute('title')).toMatch(/, EP and ETP\.$/);
    await first.locator('button[data-apply]').click();
    await expect.poll(hash).toContain('ep=8');
    expect(await hash()).not.toMatch(/[#&]etp=/);
    await expect.poll(moeOf, { timeout: runTimeout }).toBe('8:2:8:1');
    expect(await controls().locator('input[data-control="cluster-etp"]').inputValue()).toBe('1');
    await expect.poll(() => first.locator('button[data-apply]').textContent()).toMatch(/on the page/);
  });

  test('the pasted config stays in its tab: a reload keeps it, a new tab with the same link is told to paste it', async () => {
    await page.reload();
    await expect.poll(moeOf, { timeout: runTimeout }).toBe('8:2:8:1');
    const link = page.url();
    const other = await page.context().browser()!.newPage(); // a new context: another tab's sessionStorage
    try {
      await other.goto(link, { waitUntil: 'load' });
      await expect
        .poll(() => other.locator('tp-machine-controls [data-error-for="cmodel"]').textContent(), {
          timeout: runTimeout,
        })
        .toMatch(/cmodel=hf:pasted names a config\.json pasted in this tab, and this tab has none/);
      expect(await other.locator('tp-cluster-panel [data-cluster-error]').textContent()).toMatch(/this tab has none/);
    } finally {
      await other.close();
    }
    expect(open.pageErrors).toEqual([]);
  });
});
