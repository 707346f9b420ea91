import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { deadLinks, headingAnchors, namedPaths, pathExists, relativeLinks } from './markdown-links.ts';

const root = resolve(import.meta.dirname, '../../..');
const docs = join(root, 'docs');
const files = [
  join(root, 'README.md'),
  ...readdirSync(docs)
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(docs, f)),
];

/** The repository's top folders a doc may name a path under. */
const folders = ['src', 'tests', 'scripts', 'shaders', 'docs'];

/** Paths the docs name that are not this repository's: [file, path prefix, whose]. */
const foreign: readonly (readonly [string, string, string])[] = [
  ['docs/topology.md', 'src/graph/', "NCCL's source tree"],
  ['docs/cluster.md', 'src/graph/', "NCCL's source tree"],
  ['docs/projection.md', 'docs/user-guide/', "Megatron-Core's documentation"],
  ['docs/kernels.md', 'shaders/noop.wgsl', 'the recipe tried on a scratch branch, not merged'],
  ['docs/kernels.md', 'src/reference/noop.ts', 'the recipe tried on a scratch branch, not merged'],
  ['docs/kernels.md', 'tests/gpu/kernels/noop.test.ts', 'the recipe tried on a scratch branch, not merged'],
];

describe('relative links in the docs', () => {
  it('README.md and every docs/*.md link only to files and headings that exist', () => {
    const dead = files.flatMap((f) => deadLinks(f).map((d) => `${f.slice(root.length + 1)}:${d}`));
    expect(dead).toEqual([]);
  });

  it('README.md and every docs/*.md name only repository paths that exist', () => {
    const missing = files.flatMap((f) => {
      const name = f.slice(root.length + 1);
      return namedPaths(readFileSync(f, 'utf8'), folders)
        .filter((p) => !foreign.some(([file, prefix]) => file === name && p.path.startsWith(prefix)))
        .filter((p) => !pathExists(root, p.path, p.glob))
        .map((p) => `${name}:${p.line}: ${p.path}`);
    });
    expect(missing).toEqual([]);
  });

  it('finds a dead file, a dead heading and skips code and external links', () => {
    const dir = mkdtempSync(join(tmpdir(), 'doc-links-'));
    writeFileSync(join(dir, 'b.md'), '# Two words\n\n## `npm run bench:comm`\n\n## Two words\n');
    writeFileSync(
      join(dir, 'a.md'),
      [
        '[ok](b.md#two-words) [ok](b.md#npm-run-benchcomm) [ok](b.md#two-words-1) ![img](b.md)',
        '[gone](c.md) [no heading](b.md#three) [self](#nowhere)',
        '`[code](c.md)` [web](https://example.com/x.md)',
        '```',
        '[fenced](c.md)',
        '```',
      ].join('\n'),
    );
    expect(deadLinks(join(dir, 'a.md'))).toEqual([
      '2: c.md',
      '2: b.md#three (no such heading)',
      '2: #nowhere (no such heading)',
    ]);
    expect(relativeLinks('[x](a%20b.md#c)')).toEqual([{ line: 1, target: 'a%20b.md#c', path: 'a b.md', anchor: 'c' }]);
    expect(namedPaths('see src/kernels/gemm*.ts, `tests/unit/x.test.ts` and ./src/no', ['src', 'tests'])).toEqual([
      { line: 1, path: 'src/kernels/gemm', glob: true },
      { line: 1, path: 'tests/unit/x.test.ts', glob: false },
    ]);
    expect(pathExists(root, 'src/kernels/gemm', true)).toBe(true);
    expect(pathExists(root, 'src/kernels/nothing', true)).toBe(false);
    expect(pathExists(root, 'src/kernels/gemm', false)).toBe(false);
    expect([...headingAnchors('# A, b: c!\n# A, b: c!')]).toEqual(['a-b-c', 'a-b-c-1']);
  });
});
