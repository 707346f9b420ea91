// The CLI's GEMM tuning cache: decisions kept between runs of bench:gemm, per adapter and kernel hash.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { StoredGemmChoices } from '../../src/kernels/gemm-cache.ts';

/** Default location: under node_modules/.cache (ignored by git, cleared with node_modules). */
export const defaultGemmCacheFile = 'node_modules/.cache/tp-playground/gemm-tuning.json';

/** The stored decisions, or none when the file is missing; a file that is not a JSON object is an error naming it. */
export function readGemmCache(path: string): StoredGemmChoices {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return {};
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new Error(
      `GEMM tuning cache ${path} is not valid JSON (${(e as Error).message}); delete it or run with --fresh.`,
      { cause: e },
    );
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    throw new Error(`GEMM tuning cache ${path} is not a JSON object; delete it or run with --fresh.`);
  return data as StoredGemmChoices;
}

/** Adds `entries` to the file (entries of other adapters and kernel hashes are kept). */
export function writeGemmCache(path: string, entries: StoredGemmChoices): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify({ ...readGemmCache(path), ...entries }, null, 2)}\n`);
}

/** Removes the file (a fresh run). */
export function clearGemmCache(path: string): void {
  rmSync(path, { force: true });
}
