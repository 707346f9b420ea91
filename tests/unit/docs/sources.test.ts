import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../../..');

/** Every text file under `dir` (TypeScript, JavaScript, WGSL, Markdown, shell). */
function textFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return textFiles(path);
    return /\.(ts|mts|mjs|cjs|js|wgsl|md|sh)$/.test(e.name) ? [path] : [];
  });
}

/** The seed questions `text` cites: M followed by three digits. */
function citedIds(text: string): string[] {
  return [...text.matchAll(/\bM(\d{3})\b/g)].map((m) => `M${m[1]}`);
}

describe('docs/sources.md', () => {
  const sources = readFileSync(join(root, 'docs/sources.md'), 'utf8');
  const described = new Set([...sources.matchAll(/^- \*\*(M\d{3})\*\* — \S/gm)].map((m) => m[1]));

  it('gives every seed question cited in the code, tests, scripts and docs a line', () => {
    const files = [
      join(root, 'README.md'),
      ...['src', 'tests', 'scripts', 'docs', 'shaders'].flatMap((d) => textFiles(join(root, d))),
    ];
    const cited = new Set(
      files.filter((f) => !f.endsWith('sources.md')).flatMap((f) => citedIds(readFileSync(f, 'utf8'))),
    );
    expect(cited.size).toBeGreaterThan(0);
    expect([...cited].filter((id) => !described.has(id))).toEqual([]);
  });

  it('describes each question once, and reads an id only as M and three digits', () => {
    expect(sources.match(/^- \*\*M\d{3}\*\*/gm)?.length).toBe(described.size);
    expect(citedIds('seed M035, M037/M040 and M037–M040; not XM0355 or M35')).toEqual([
      'M035',
      'M037',
      'M040',
      'M037',
      'M040',
    ]);
  });
});
