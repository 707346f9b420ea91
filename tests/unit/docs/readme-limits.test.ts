import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { deadLinks } from './markdown-links.ts';

const root = resolve(import.meta.dirname, '../../..');
const readme = join(root, 'README.md');
const text = readFileSync(readme, 'utf8');
const lines = text.replace(/\n$/, '').split('\n');
/** Characters as a reader counts them: code points, not UTF-16 units. */
const length = (s: string): number => [...s].length;

describe('README.md stays a front door', () => {
  it('has at most 200 lines, 12,000 characters and 120 characters a line', () => {
    expect(lines.length).toBeLessThanOrEqual(200);
    expect(length(text)).toBeLessThanOrEqual(12_000);
    expect(lines.map((l, i) => [i + 1, length(l)]).filter(([, n]) => n > 120)).toEqual([]);
    expect(length('×→≤')).toBe(3);
  });

  it('links only to files that exist', () => {
    expect(deadLinks(readme)).toEqual([]);
  });

  it('gives the two commands, each an npm script of package.json', () => {
    const scripts = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts as Record<string, string>;
    for (const command of ['npm ci && npm run dev', 'npm ci && npm test']) expect(lines).toContain(command);
    expect(scripts.dev).toBeDefined();
    expect(scripts.test).toBeDefined();
  });
});
