#!/usr/bin/env node
// Makes sure the Chromium the GPU and end-to-end tests drive is installed (npm's pretest step and
// .ci/run call it). Plain Node, no packages: it runs before `npm ci` on CI.
//   CHROMIUM_PATH set: that binary must exist (nothing is installed).
//   otherwise /usr/bin/chromium; when missing, as root with apt-get: apt-get install -y chromium;
//   not root: prints the one command to run and exits 1.
// Flags (for tests): --dry-run (say what would be done, change nothing), --default-path P.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const args = process.argv.slice(2);
const dryRun = args.includes('--dry-run');
const flag = args.indexOf('--default-path');
const defaultPath = flag >= 0 ? args[flag + 1] : '/usr/bin/chromium';
const say = (line) => process.stderr.write(`ensure-chromium: ${line}\n`);

const chosen = process.env.CHROMIUM_PATH;
if (chosen) {
  if (existsSync(chosen)) process.exit(0);
  say(
    `CHROMIUM_PATH is ${chosen}, which does not exist; point it at a Chromium or Chrome binary, or unset it to use ${defaultPath}.`,
  );
  process.exit(1);
}
if (existsSync(defaultPath)) process.exit(0);

const install = 'apt-get update && apt-get install -y chromium';
const root = typeof process.getuid === 'function' && process.getuid() === 0;
const apt = existsSync('/usr/bin/apt-get');
if (!root || !apt) {
  say(`Chromium is missing at ${defaultPath}; the GPU and end-to-end tests run in it.`);
  say(
    apt
      ? `Install it with: sudo sh -c '${install}'`
      : 'Install Chromium with your package manager, or set CHROMIUM_PATH to a Chromium or Chrome binary.',
  );
  process.exit(1);
}
say(`Chromium is missing at ${defaultPath}; installing it: ${install}`);
if (dryRun) process.exit(0);
const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
for (const step of [
  ['update', '-qq'],
  ['install', '-y', '-qq', 'chromium'],
]) {
  const r = spawnSync('apt-get', step, { stdio: 'inherit', env });
  if (r.status !== 0) {
    say(`apt-get ${step.join(' ')} failed (status ${r.status}); install Chromium by hand: ${install}`);
    process.exit(1);
  }
}
if (!existsSync(defaultPath)) {
  say(`apt-get installed chromium but ${defaultPath} is still missing; set CHROMIUM_PATH to its binary.`);
  process.exit(1);
}
say(`installed ${defaultPath}`);
