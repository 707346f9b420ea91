// npm run mutate [-- <path>… | --base <ref>]: StrykerJS (Vitest runner, unit project only) over the
// pure modules a change touches. Without paths, the .ts files under src/<pure module>/ that differ
// from <ref> (default main: committed, staged and unstaged changes, and new untracked files).
// Paths may be files, folders or file.ts:from-to line ranges; anything outside the pure modules
// is skipped with a note. Prints Stryker's table and one Markdown row per file: killed, timed
// out, survived, no coverage, score = detected / (detected + undetected), detected = killed +
// timed out, undetected = survived + no coverage.
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createRequire } from 'node:module';
import { Stryker } from '@stryker-mutator/core';

type MutantResult = Awaited<ReturnType<Stryker['runMutationTest']>>[number];

/** src/ folders with no DOM, GPU or worker: what the unit project tests directly (the list dependency-cruiser holds pure). */
export const pureModules = createRequire(import.meta.url)('./pure-layers.cjs') as readonly string[];

const pureFile = new RegExp(`^src/(${pureModules.join('|')})/.+(?<!\\.d)\\.ts$`);

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    base: { type: 'string', default: 'main' },
    concurrency: { type: 'string', default: '1' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  process.stdout.write(
    'npm run mutate -- [--base <ref>] [--concurrency n] [path…]\n' +
      `  Mutation-tests the .ts files under src/{${pureModules.join(',')}}/ given (files or folders),\n` +
      '  or, with no path, those that differ from <ref> (default main). Unit tests only.\n',
  );
  process.exit(0);
}

const git = (...args: string[]): string[] =>
  execFileSync('git', args, { encoding: 'utf8' })
    .split('\n')
    .filter((x) => x.length > 0);

/** A path's .ts files; `file.ts:from-to` keeps Stryker's line range (to bound a run on a large file). */
function filesOf(path: string): string[] {
  const [, name = path, lines = ''] = /^(.*?)(:\d+-\d+)?$/.exec(path) ?? [];
  const rel = relative(process.cwd(), resolve(name)).replaceAll('\\', '/');
  if (!existsSync(rel)) throw new Error(`mutate: no such path ${path}.`);
  if (!statSync(rel).isDirectory()) return [rel + lines];
  if (lines) throw new Error(`mutate: a line range needs a file, not the folder ${name}.`);
  return git('ls-files', '--', `${rel}/*.ts`, `${rel}/**/*.ts`);
}
/** The file of a `file.ts:from-to` entry. */
const fileOf = (entry: string): string => entry.replace(/:\d+-\d+$/, '');

const candidates = positionals.length
  ? positionals.flatMap(filesOf)
  : [
      ...git('diff', '--name-only', '--diff-filter=AMR', values.base, '--', 'src'),
      ...git('ls-files', '--others', '--exclude-standard', '--', 'src'),
    ];
const files = [...new Set(candidates)].filter((f) => pureFile.test(fileOf(f)) && existsSync(fileOf(f))).sort();
for (const f of candidates.filter((x) => !files.includes(x)))
  process.stderr.write(`mutate: skipping ${f} (not a .ts file of a pure module)\n`);
if (!files.length) {
  process.stderr.write(
    positionals.length ? 'mutate: nothing to mutate.\n' : `mutate: no pure module differs from ${values.base}.\n`,
  );
  process.exit(positionals.length ? 2 : 0);
}
process.stderr.write(`mutate: ${files.length} file(s): ${files.join(' ')}\n`);

const results: MutantResult[] = await new Stryker({
  mutate: files,
  testRunner: 'vitest',
  vitest: { configFile: 'scripts/repo/mutate-vitest.config.ts', related: true },
  coverageAnalysis: 'perTest',
  concurrency: Number(values.concurrency),
  reporters: ['clear-text', 'progress'],
  clearTextReporter: { allowColor: false, reportTests: false, reportMutants: false },
  // The sandbox needs the sources, the unit tests and their fixtures, not the page's assets.
  ignorePatterns: ['dist', 'docs', 'test-results', '.device', 'tests/e2e', 'tests/gpu', 'public'],
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
}).runMutationTest();

const detected = new Set(['Killed', 'Timeout']);
const undetected = new Set(['Survived', 'NoCoverage']);
process.stdout.write(
  '\n| file | killed | timeout | survived | no coverage | score |\n|---|---:|---:|---:|---:|---:|\n',
);
for (const f of files) {
  const mine = results.filter((r) => relative(process.cwd(), resolve(r.fileName)).replaceAll('\\', '/') === fileOf(f));
  const n = (status: string): number => mine.filter((r) => r.status === status).length;
  const hit = mine.filter((r) => detected.has(r.status)).length;
  const miss = mine.filter((r) => undetected.has(r.status)).length;
  const score = hit + miss ? `${((100 * hit) / (hit + miss)).toFixed(1)} %` : 'n/a';
  process.stdout.write(
    `| ${f} | ${n('Killed')} | ${n('Timeout')} | ${n('Survived')} | ${n('NoCoverage')} | ${score} |\n`,
  );
}
