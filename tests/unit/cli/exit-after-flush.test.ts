import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, test } from 'vitest';

const root = resolve(import.meta.dirname, '../../..');

/** Bytes a child writes to its stdout pipe before it exits, read to the end. */
function pipedBytes(script: string): Promise<number> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let n = 0;
    // Read slowly, as a consumer like `jq` or `less` may: the child's writes outrun the pipe.
    child.stdout.on('data', (b: Buffer) => {
      n += b.length;
      child.stdout.pause();
      setTimeout(() => child.stdout.resume(), 1);
    });
    child.on('error', fail);
    child.on('close', () => done(n));
  });
}

const bytes = 1 << 20;
const print = `console.log('x'.repeat(${bytes - 1}));`;

describe('exitAfterFlush', () => {
  test('a 1 MiB report piped to a slow reader arrives whole before the process exits', async () => {
    const n = await pipedBytes(
      `import { exitAfterFlush } from './scripts/cli/exit-after-flush.ts'; ${print} await exitAfterFlush(0);`,
    );
    expect(n).toBe(bytes);
  }, 30_000);

  test('process.exit alone cuts the same report (what the helper is for)', async () => {
    expect(await pipedBytes(`${print} process.exit(0);`)).toBeLessThan(bytes);
  }, 30_000);
});
