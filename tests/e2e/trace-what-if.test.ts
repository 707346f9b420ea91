// #view=trace, what-if: a job's traces and manifest dropped; the job re-projected on its own rates,
// then another layout chosen on the page, each step as the pure module computes it in Node.
import { expect, test } from 'vitest';
import { dropTraces as drop } from '../../scripts/page/page-views.ts';
import { whatIfFromTrace } from '../../src/calibrate/trace-what-if.ts';
import { changedSetup } from '../../src/calibrate/what-if-layout.ts';
import { jobBundle } from '../../src/megatron/job-bundle.ts';
import { jobManifestFile, manifestProjection, readJobManifest } from '../../src/megatron/job-manifest.ts';
import { loadJob, tp2JobSpec } from '../unit/kineto/kineto-fixtures.ts';
import { withE2ePage } from './built-page.ts';

test('#view=trace: the what-if re-projects the job and a chosen layout on the trace’s rates; a refused layout is named', async () => {
  const manifest = jobBundle(tp2JobSpec).find((f) => f.path === jobManifestFile)!;
  const { parsed, system } = manifestProjection(readJobManifest(manifest.text));
  const job = { label: 'job', setup: parsed.setup, dtype: parsed.dtype };
  const other = { label: 't1', setup: changedSetup(parsed.setup, { tp: 1, gpus: 1 }), dtype: parsed.dtype };
  const w = await whatIfFromTrace(await loadJob('tp2-rank0.json', 'tp2-rank1.json'), job, system, [other]);
  const [own, chosen] = [w.job, w.rows[0]!];
  if (!own.ok || !chosen.ok) throw new Error('the what-if of the fixtures must project');
  await withE2ePage('/#view=trace', async (page, pageErrors) => {
    await page.locator('tp-trace-view [data-drop]').waitFor({ timeout: 90_000 });
    await drop(page, ['tp2-rank0.json', 'tp2-rank1.json.gz', { name: jobManifestFile, text: manifest.text }]);
    const jobRow = page.locator('tp-trace-what-if tr[data-layout="job"]');
    await expect.poll(() => jobRow.count(), { timeout: 60_000 }).toBe(1);
    expect(Number(await jobRow.getAttribute('data-reprojected-ms'))).toBeCloseTo(own.reprojected.stepMs, 9);
    expect(Number(await jobRow.getAttribute('data-nominal-ms'))).toBeCloseTo(own.nominal.stepMs, 9);
    const gemm = page.locator('tp-trace-what-if tr[data-class="gemm"]');
    expect(Number(await gemm.getAttribute('data-scale'))).toBeCloseTo(w.rates.classes[0]!.scale, 9);
    await page.locator('tp-trace-what-if select[data-key="tp"]').selectOption('1');
    await page.locator('tp-trace-what-if select[data-key="gpus"]').selectOption('1');
    await page.locator('tp-trace-what-if [data-what-if]').click();
    const otherRow = page.locator('tp-trace-what-if tr[data-layout="other"]');
    await expect.poll(() => otherRow.count(), { timeout: 60_000 }).toBe(1);
    expect(Number(await otherRow.getAttribute('data-reprojected-ms'))).toBeCloseTo(chosen.reprojected.stepMs, 9);
    // t = 4 on the job's 2 GPUs: Megatron refuses it, and the page says which rule.
    await page.locator('tp-trace-what-if select[data-key="gpus"]').selectOption('2');
    await page.locator('tp-trace-what-if select[data-key="tp"]').selectOption('4');
    await page.locator('tp-trace-what-if [data-what-if]').click();
    const error = page.locator('tp-trace-what-if [data-what-if-error]');
    await expect.poll(() => error.count(), { timeout: 30_000 }).toBe(1);
    expect(await error.textContent()).toContain('t · p · cp must divide the GPU budget N');
    expect(pageErrors).toEqual([]);
  });
}, 240_000);
