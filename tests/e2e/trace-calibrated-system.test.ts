// #view=trace with a calibrated system file (docs/calibrate.md): dropped with a job's traces and
// manifest, it becomes the projection's system and the projected step moves with its fits.
import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { dropTraces as drop } from '../../scripts/page/page-views.ts';
import { calibrateSystem } from '../../src/calibrate/calibrate-system.ts';
import { parseNcclTests } from '../../src/calibrate/nccl-tests-parse.ts';
import { calibratedSystemFile, systemFileText } from '../../src/calibrate/system-file.ts';
import { systems } from '../../src/hardware/systems.ts';
import { jobBundle } from '../../src/megatron/job-bundle.ts';
import { jobManifestFile } from '../../src/megatron/job-manifest.ts';
import { tp2JobSpec } from '../unit/kineto/kineto-fixtures.ts';
import { withE2ePage } from './built-page.ts';

test('#view=trace: a calibrated-system.json dropped after the traces and manifest re-projects the job on it', async () => {
  const manifest = jobBundle(tp2JobSpec).find((f) => f.path === jobManifestFile)!;
  // The job's DGX H100 with nccl-tests#232's 2-rank all-reduce (47 GB/s bus bandwidth, α 30 µs)
  // in place of NVLink's 370 GB/s: the job's t = 2 all-reduces take longer.
  const text = readFileSync('tests/fixtures/nccl-tests/nccl-tests-232-all-reduce-2node.txt', 'utf8');
  const system = calibrateSystem(systems['dgx-h100'], [{ run: parseNcclTests(text)[0]!, source: 'ar' }], []).system;
  await withE2ePage('/#view=trace', async (page, pageErrors) => {
    await page.locator('tp-trace-view [data-drop]').waitFor({ timeout: 90_000 });
    await drop(page, ['tp2-rank0.json', 'tp2-rank1.json.gz', { name: jobManifestFile, text: manifest.text }]);
    const stepRow = page.locator('tp-trace-projection tr[data-what="step"]');
    await expect.poll(() => stepRow.count(), { timeout: 60_000 }).toBe(1);
    const catalogMs = Number(await stepRow.getAttribute('data-projected-ms'));
    const commRow = page.locator('tp-trace-projection tr[data-what="comm"]');
    const catalogCommMs = Number(await commRow.getAttribute('data-projected-ms'));
    await drop(page, [{ name: calibratedSystemFile, text: systemFileText(system) }]);
    await expect
      .poll(() => page.locator('tp-trace-projection p[data-job]').textContent(), { timeout: 60_000 })
      .toContain('DGX H100: 8×H100 SXM, NVLink 4, calibrated');
    expect(await page.locator('tp-trace-projection select[data-system]').inputValue()).toBe('calibrated');
    expect(Number(await commRow.getAttribute('data-projected-ms'))).toBeGreaterThan(catalogCommMs);
    expect(Number(await stepRow.getAttribute('data-projected-ms'))).toBeGreaterThan(catalogMs);
    // A file that is not a system file is named with what is wrong.
    await drop(page, [{ name: calibratedSystemFile, text: '{"kind":"other"}' }]);
    await expect
      .poll(() => page.locator('tp-trace-view [data-trace-error]').textContent())
      .toMatch(/calibrated-system.json: kind and version must be "tp-playground-system" and 1/);
    expect(pageErrors).toEqual([]);
  });
}, 180_000);
