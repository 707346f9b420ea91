import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { tarArchive } from '../../../src/export/tar.ts';

const dir = mkdtempSync(join(tmpdir(), 'tar-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('tarArchive', () => {
  test('GNU tar lists and extracts it: contents, UTF-8 and the executable bit survive', () => {
    const files = [
      { path: 'README.md', text: '# job\n\nt = 2 · SP — ünïcode\n', executable: false },
      { path: 'launch.sh', text: '#!/usr/bin/env bash\necho hi\n', executable: true },
      { path: 'empty.txt', text: '', executable: false },
      { path: 'big.txt', text: 'x'.repeat(1300), executable: false },
    ];
    const tar = join(dir, 'job.tar');
    writeFileSync(tar, tarArchive('job', files, 1_700_000_000));
    expect(execFileSync('tar', ['-tf', tar], { encoding: 'utf8' }).trim().split('\n')).toEqual([
      'job/',
      'job/README.md',
      'job/launch.sh',
      'job/empty.txt',
      'job/big.txt',
    ]);
    execFileSync('tar', ['-xf', tar, '-C', dir]);
    for (const f of files) expect(readFileSync(join(dir, 'job', f.path), 'utf8')).toBe(f.text);
    expect(statSync(join(dir, 'job', 'launch.sh')).mode & 0o777).toBe(0o755);
    expect(statSync(join(dir, 'job', 'README.md')).mode & 0o777).toBe(0o644);
    expect(execFileSync(join(dir, 'job', 'launch.sh'), { encoding: 'utf8' })).toBe('hi\n');
  });

  test('refuses a path ustar cannot hold', () => {
    expect(() => tarArchive('job', [{ path: 'x'.repeat(100), text: '', executable: false }], 0)).toThrow(
      /longer than 100 bytes/,
    );
  });
});
