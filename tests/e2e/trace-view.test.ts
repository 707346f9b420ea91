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
    // A command without --swiglu is Megatron's GPT layer, and is projected as that.
    expect(await page.locator('tp-trace-projection p.note[data-job]').innerText()).toContain(
      'the GPT layer (no --swiglu)',
    );
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

test("#view=trace: a rank's memory snapshot dropped with the manifest is drawn, allocated and reserved, beside the projected peak of its stage", async () => {
  const manifest = jobBundle(tp2JobSpec).find((f) => f.path === jobManifestFile)!;
  // As memory_snapshot_json.py writes it (tests/unit/kineto/memory-snapshot.test.ts converts a real-format pickle):
  // a 2 MiB segment, 1 MiB and 512 KiB allocated, the 1 MiB freed; rank 1 is the job's last.
  const MiB = 2 ** 20;
  const ev = (action: string, size: number, t: number) => ({ action, addr: 0, size, stream: 0, time_us: 1e15 + t });
  const snapshot = {
    rank: 1,
    segments: [{ address: 0, total_size: 2 * MiB, allocated_size: MiB / 2, active_size: MiB / 2, stream: 0 }],
    device_traces: [
      [
        ev('segment_alloc', 2 * MiB, 0),
        ev('alloc', MiB, 100),
        ev('alloc', MiB / 2, 200),
        ev('free_requested', MiB, 300),
        ev('free_completed', MiB, 400),
      ],
    ],
  };
  await withE2ePage('/#view=trace', async (page, pageErrors) => {
    await page.locator('tp-trace-view [data-drop]').waitFor({ timeout: 90_000 });
    const memory = page.locator('tp-trace-memory');
    // Two snapshots at once are refused with the reason.
    const file = (rank: number) => ({ name: `memory-rank-${rank}.json`, text: JSON.stringify({ ...snapshot, rank }) });
    await drop(page, [file(0), file(1)]);
    await expect
      .poll(() => page.locator('tp-trace-view [data-trace-error]').textContent())
      .toMatch(/memory-rank-0\.json, memory-rank-1\.json: drop one rank's memory snapshot at a time/);
    await drop(page, ['tp2-rank0.json', 'tp2-rank1.json.gz', { name: jobManifestFile, text: manifest.text }, file(1)]);
    const peak = memory.locator('tr[data-line="peak allocated"]');
    await expect.poll(() => peak.count(), { timeout: 60_000 }).toBe(1);
    expect(Number(await peak.getAttribute('data-measured-bytes'))).toBe(1.5 * MiB);
    expect(Number(await peak.getAttribute('data-predicted-bytes'))).toBeGreaterThan(0);
    expect(await memory.locator('[data-memory-summary]').textContent()).toMatch(
      /5 allocator events[\s\S]*peak allocated\s+1\.5 MiB/,
    );
    for (const s of ['allocated', 'reserved', 'projected-peak'])
      expect(await memory.locator(`svg[data-memory-chart] [data-series="${s}"]`).count(), s).toBe(1);
    expect(await memory.locator('tr[data-line^="CUDA context"]').getAttribute('data-measured-bytes')).toBe('');
    // The traces were read too (in the reader worker: the snapshot is drawn before they land).
    await expect.poll(() => page.locator('tp-trace-totals tr[data-rank]').count(), { timeout: 60_000 }).toBe(2);
    await memory.screenshot({ path: 'test-results/trace-view-memory.png' });
    expect(pageErrors).toEqual([]);
  });
});
