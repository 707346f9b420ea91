#!/usr/bin/env node
// The static checks of `npm test`, run at the same time (each is one single-threaded Node process,
// so on a machine with cores to spare the wall time is about the slowest one's): types (`tsc
// --noEmit`, tsconfig.json: run before the others it would hold one core while the rest idled),
// import layers (dependency-cruiser, .dependency-cruiser.cjs), lint (ESLint,
// eslint.config.js) and format (Biome's formatter for the code and JSON, biome.json, with Prettier's
// rules; Prettier, .prettierrc.json, for the Markdown and HTML Biome does not format). Each one's output is printed when it
// ends, with its time; the exit status is non-zero when any of them fails.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);

/** [name, command, args]: what npm run typecheck, lint:deps, lint and format:check run. */
const checks = [
  ['tsc', bin('tsc'), ['--noEmit']],
  ['dependency-cruiser', bin('depcruise'), ['src', 'scripts']],
  ['eslint', bin('eslint'), ['--cache', '--cache-location', 'node_modules/.cache/eslint/', '.']],
  ['biome format', bin('biome'), ['format', '.']],
  ['prettier (md, html)', bin('prettier'), ['--check', '--cache', '**/*.{md,html}']],
];

function run([name, cmd, args]) {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let ended = false;
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const done = (code, why) => {
      if (ended) return;
      ended = true;
      const s = ((Date.now() - t0) / 1000).toFixed(1);
      const text = out.trim() ? `${out.trimEnd()}\n` : '';
      process.stdout.write(`── ${name}: ${code === 0 ? 'ok' : `FAILED (${why})`}, ${s} s\n${text}`);
      resolve(code === 0);
    };
    child.on('error', (e) => done(1, `${cmd} could not start: ${e.message}; run npm ci`));
    child.on('close', (code, signal) => done(code ?? 1, signal ? `killed by ${signal}` : `exit ${code}`));
  });
}

const ok = await Promise.all(checks.map(run));
process.exitCode = ok.every(Boolean) ? 0 : 1;
