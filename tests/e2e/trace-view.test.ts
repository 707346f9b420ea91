// #view=trace on the served page (Vite dev server, COOP/COEP), driven from Node with Playwright:
// drop the hand-written two-rank Kineto fixtures and read back the ranks and their exposed times.
import type { Page } from 'playwright';
import { expect, test } from 'vitest';
import { dropTraces as drop } from '../../scripts/page/page-views.ts';
import { jobBundle } from '../../src/megatron/job-bundle.ts';
import { jobManifestFile } from '../../src/megatron/job-manifest.ts';
import { tp2JobSpec } from '../unit/kineto/kineto-fixtures.ts';
import { withE2ePage } from './built-page.ts';

const exposed = (page: Page, rank: number) =>
  page.locator(`tp-trace-totals tr[data-rank="${rank}"]`).getAttribute('data-exposed-ms').then(Number);

test('#view=trace: dropping two ranks (one gzipped) shows both ranks on the timeline and their hand-computed exposed times', async () => {
  await withE2ePage('/#view=trace', async (page, pageErrors) => {
    await page.setViewportSize({ width: 1600, height: 1000 });
    await page.locator('tp-trace-view [data-drop]').waitFor({ timeout: 90_000 });
    await drop(page, ['tp2-rank0.json', 'tp2-rank1.json.gz']);
    await expect.poll(() => page.locator('tp-trace-totals tr[data-rank]').count(), { timeout: 60_000 }).toBe(2);
    // tests/unit/trace/measured-analysis.test.ts: rank 0 exposes 350 µs, rank 1 500 µs (whole trace).
    expect(await exposed(page, 0)).toBeCloseTo(0.35, 9);
    expect(await exposed(page, 1)).toBeCloseTo(0.5, 9);
    expect(await page.locator('tp-trace-totals tr[data-rank="1"]').innerText()).toContain('tp2-rank1.json.gz');
    // The first step is shown: both ranks' lanes, the NCCL kernels hatched where exposed.
    expect(await page.locator('tp-trace-view select[data-step-select]').inputValue()).toBe('1');
    for (const r of [0, 1])
      for (const lane of ['compute', 'comm'])
        expect(await page.locator(`tp-timeline g[data-lane="${lane}"][data-rank="${r}"] rect`).count()).toBeGreaterThan(
          0,
        );
    // Step 1: rank 0 exposes [500,600) and [850,900) µs, rank 1 [450,600) and [850,900): two exposed parts each.
    expect(await page.locator('tp-timeline rect[data-kind="exposed"][data-rank="0"]').count()).toBe(2);
    expect(await page.locator('tp-timeline rect[data-kind="exposed"][data-rank="1"]').count()).toBe(2);
    expect(await page.locator('tp-trace-totals tr[data-step="2"]').getAttribute('data-slowest')).toBe('1');
    expect(await page.locator('tp-trace-totals tr[data-step="2"]').getAttribute('data-straggler')).toBe('0');
    await page.screenshot({ path: 'test-results/trace-view.png', fullPage: true });
    // The whole trace: rank 1's second all-reduce [1200,1500) µs is exposed too.
    await page.locator('tp-trace-view select[data-step-select]').selectOption('all');
    await expect.poll(() => page.locator('tp-timeline rect[data-kind="exposed"][data-rank="1"]').count()).toBe(3);
    // The configuration the job ran, pasted as its Megatron-LM command: the projected step beside the measured one.
    await page.locator('tp-trace-projection [data-project]').waitFor();
    await page
      .locator('tp-trace-projection textarea[data-command]')
      .fill(
        'torchrun --nproc-per-node 2 pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 2 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 --micro-batch-size 1 --bf16',
      );
    expect(await page.locator('tp-trace-projection select[data-system]').inputValue()).toBe('dgx-h100');
    await page.locator('tp-trace-projection [data-project]').click();
    const stepRow = page.locator('tp-trace-projection tr[data-what="step"]');
    await expect.poll(() => stepRow.count(), { timeout: 60_000 }).toBe(1);
    // Measured: the whole trace's longest span, 1.55 ms (rank 1); projected: a positive step of the model.
    expect(Number(await stepRow.getAttribute('data-measured-ms'))).toBeCloseTo(1.55, 9);
    expect(Number(await stepRow.getAttribute('data-projected-ms'))).toBeGreaterThan(0);
    expect(await page.locator('tp-trace-projection tr[data-collective="allReduce"]').count()).toBe(1);
    await page.locator('tp-trace-view select[data-step-select]').selectOption('2');
    await expect.poll(async () => Number(await stepRow.getAttribute('data-measured-ms'))).toBeCloseTo(0.55, 9);
    await page.screenshot({ path: 'test-results/trace-view-projection.png', fullPage: true });
    await page
      .locator('tp-trace-projection textarea[data-command]')
      .fill('pretrain_gpt.py --hidden-size 1024 --seq-length 512');
    await page.locator('tp-trace-projection [data-project]').click();
    await expect
      .poll(() =>
        page
          .locator('tp-trace-projection [data-projection-error]')
          .innerText()
          .catch(() => ''),
      )
      .toMatch(/no --num-attention-heads/);
    // A malformed file gets a message naming it and what is wrong; the job on screen stays.
    await drop(page, ['truncated.json']);
    await expect
      .poll(
        () =>
          page
            .locator('tp-trace-view [data-trace-error]')
            .innerText()
            .catch(() => ''),
        { timeout: 30_000 },
      )
      .toMatch(/^truncated\.json: the JSON ends inside traceEvents/);
    expect(await page.locator('tp-trace-totals tr[data-rank]').count()).toBe(2);
    expect(pageErrors).toEqual([]);
  });
});

test("#view=trace: a job bundle's manifest dropped with its traces selects the projection, nothing pasted", async () => {
  const manifest = jobBundle(tp2JobSpec).find((f) => f.path === jobManifestFile)!;
  await withE2ePage('/#view=trace', async (page, pageErrors) => {
    await page.locator('tp-trace-view [data-drop]').waitFor({ timeout: 90_000 });
    await drop(page, ['tp2-rank0.json', 'tp2-rank1.json.gz', { name: jobManifestFile, text: manifest.text }]);
    const stepRow = page.locator('tp-trace-projection tr[data-what="step"]');
    await expect.poll(() => stepRow.count(), { timeout: 60_000 }).toBe(1);
    expect(await page.locator('tp-trace-totals tr[data-rank]').count()).toBe(2);
    // ProfilerStep#1, shown first: 950 µs measured (tests/unit/kineto/measured-analysis.test.ts).
    expect(Number(await stepRow.getAttribute('data-measured-ms'))).toBeCloseTo(0.95, 9);
    expect(Number(await stepRow.getAttribute('data-projected-ms'))).toBeGreaterThan(0);
    expect(await page.locator('tp-trace-projection [data-job]').getAttribute('data-job')).toBe('tp2-h100');
    expect(await page.locator('tp-trace-projection textarea[data-command]').inputValue()).toContain(
      '--tensor-model-parallel-size 2',
    );
    expect(pageErrors).toEqual([]);
  });
});
