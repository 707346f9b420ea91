import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { expect, test, vi } from 'vitest';

vi.setConfig({ testTimeout: 30_000 }); // each test starts Node; seconds on a busy machine

const script = 'scripts/device/ensure-chromium.mjs';
const missing = '/nonexistent/chromium';
const root = process.getuid?.() === 0;
const env = { ...process.env, CHROMIUM_PATH: '' };
const run = (args: string[], opts: SpawnSyncOptions = {}) =>
  spawnSync('node', [script, ...args], { encoding: 'utf8', env, ...opts }) as { status: number; stderr: string };

test('an installed Chromium passes silently', () => {
  const r = run(['--default-path', process.execPath]); // any existing binary stands in
  expect([r.status, r.stderr]).toEqual([0, '']);
});

test('missing Chromium as root with apt-get is installed with apt-get (dry run here)', () => {
  // As root this is the install branch; as another user it is the printed command (next test).
  const r = run(['--dry-run', '--default-path', missing]);
  if (root) {
    expect(r.status).toBe(0);
    expect(r.stderr).toBe(
      `ensure-chromium: Chromium is missing at ${missing}; installing it: apt-get update && apt-get install -y chromium\n`,
    );
  } else expect(r.status).toBe(1);
});

test('missing Chromium for a user who is not root prints the one command to run and fails', () => {
  // uid 65534 (nobody) when the suite runs as root, so the branch is exercised either way.
  const r = run(['--default-path', missing], root ? { uid: 65534, gid: 65534 } : {});
  expect(r.status).toBe(1);
  expect(r.stderr).toContain(`ensure-chromium: Chromium is missing at ${missing}`);
  expect(r.stderr).toContain("Install it with: sudo sh -c 'apt-get update && apt-get install -y chromium'");
});

test('a CHROMIUM_PATH that does not exist is named and nothing is installed', () => {
  const r = run(['--dry-run'], { env: { ...process.env, CHROMIUM_PATH: missing } });
  expect(r.status).toBe(1);
  expect(r.stderr).toMatch(/^ensure-chromium: CHROMIUM_PATH is \/nonexistent\/chromium, which does not exist/);
});
