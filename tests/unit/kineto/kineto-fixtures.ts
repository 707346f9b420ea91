// Paths of the hand-written Kineto fixtures and a loader through the CLI's Node edge (fs + zlib).
import { fileURLToPath } from 'node:url';
import { readTraceFile } from '../../../scripts/trace-files.ts';
import { assembleJob } from '../../../src/kineto/kineto-job.ts';
import type { MeasuredTrace } from '../../../src/kineto/kineto-types.ts';

/** Absolute path of a fixture in tests/fixtures/kineto/. */
export const fixture = (name: string): string =>
  fileURLToPath(new URL(`../../fixtures/kineto/${name}`, import.meta.url));

/** The job of the named fixtures, read as the CLI reads them. */
export async function loadJob(...names: string[]): Promise<MeasuredTrace> {
  return assembleJob(await Promise.all(names.map((n) => readTraceFile(fixture(n)))));
}
