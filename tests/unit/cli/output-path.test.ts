import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { outputPathProblem } from '../../../scripts/cli/output-path.ts';

describe('outputPathProblem', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tp-out-'));

  test('a new file in a writable folder passes and is not left behind', () => {
    const path = join(dir, 'new.json');
    expect(outputPathProblem(path)).toBeUndefined();
    expect(existsSync(path)).toBe(false);
  });

  test('an existing file passes and keeps its content', () => {
    const path = join(dir, 'old.json');
    writeFileSync(path, 'keep');
    expect(outputPathProblem(path)).toBeUndefined();
    expect(readFileSync(path, 'utf8')).toBe('keep');
  });

  test('a missing folder, a folder and /proc are refused with the reason', () => {
    expect(outputPathProblem(join(dir, 'no', 'such', 'x.json'))).toMatch(/^ENOENT: no such file or directory/);
    expect(outputPathProblem(dir)).toBe('it is a directory');
    expect(outputPathProblem('/proc/x.json')).toMatch(/^E[A-Z]+: /);
  });
});

test('npm run sweep -- --trace /proc/x.json exits 2 with the path and the reason before anything runs', () => {
  const r = spawnSync('npx', ['tsx', 'scripts/bench/sweep.ts', '--tp', '1', '--trace', '/proc/x.json'], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(r.status).toBe(2);
  expect(r.stderr).toMatch(/^sweep: cannot write --trace \/proc\/x\.json: E[A-Z]+: .*\. Nothing was run\.$/m);
}, 60_000); // starting tsx takes seconds on a busy machine
