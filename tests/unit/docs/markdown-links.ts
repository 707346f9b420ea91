import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** A relative link of a Markdown file: its 1-based line, the file it names, the anchor after `#`. */
export interface RelativeLink {
  readonly line: number;
  readonly target: string;
  readonly path: string;
  readonly anchor: string | null;
}

/**
 * Every `[text](target)` and `![alt](target)` outside fenced code blocks and code spans whose
 * target has no scheme (http:, mailto:, …). A target of only `#anchor` names its own file (path '').
 */
export function relativeLinks(markdown: string): RelativeLink[] {
  const links: RelativeLink[] = [];
  let fenced = false;
  markdown.split('\n').forEach((raw, i) => {
    if (/^\s*(```|~~~)/.test(raw)) {
      fenced = !fenced;
      return;
    }
    if (fenced) return;
    const text = raw.replace(/(`+)[^`]*?\1/g, '');
    for (const m of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      const hash = target.indexOf('#');
      links.push({
        line: i + 1,
        target,
        path: decodeURIComponent(hash < 0 ? target : target.slice(0, hash)),
        anchor: hash < 0 ? null : decodeURIComponent(target.slice(hash + 1)),
      });
    }
  });
  return links;
}

/**
 * GitHub's heading anchors of a Markdown file: the heading text lower-cased, code marks, links'
 * targets and punctuation other than `-` and `_` dropped, spaces turned into `-`; a repeated
 * anchor gets `-1`, `-2`, … in order.
 */
export function headingAnchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  let fenced = false;
  for (const raw of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(raw)) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(raw);
    if (!m) continue;
    const base = m[1]
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** The links of `file` that name no existing file, or a heading its Markdown target lacks: "line: target". */
export function deadLinks(file: string): string[] {
  const dead: string[] = [];
  for (const l of relativeLinks(readFileSync(file, 'utf8'))) {
    const target = l.path === '' ? file : resolve(dirname(file), l.path);
    if (!existsSync(target)) dead.push(`${l.line}: ${l.target}`);
    else if (l.anchor !== null && target.endsWith('.md') && !headingAnchors(readFileSync(target, 'utf8')).has(l.anchor))
      dead.push(`${l.line}: ${l.target} (no such heading)`);
  }
  return dead;
}

/**
 * The repository paths a Markdown file names anywhere, in links, code or prose: a word starting
 * with one of `folders` and a `/`. A path followed by `*` or `<` is a pattern (`glob: true`):
 * `src/kernels/gemm*.ts` names the files of `src/kernels/` whose names start with `gemm`.
 */
export function namedPaths(
  markdown: string,
  folders: readonly string[],
): { line: number; path: string; glob: boolean }[] {
  const word = new RegExp(`(?<![\\w./<-])(?:${folders.join('|')})/[\\w./*<-]*`, 'g');
  return markdown.split('\n').flatMap((text, i) =>
    [...text.matchAll(word)].map((m) => {
      const cut = m[0].search(/[*<]/);
      return cut < 0
        ? { line: i + 1, path: m[0].replace(/[.-]+$/, ''), glob: false }
        : { line: i + 1, path: m[0].slice(0, cut), glob: true };
    }),
  );
}

/** Whether `path` (relative to `root`) exists, or for a pattern whether a file in its folder starts with it. */
export function pathExists(root: string, path: string, glob: boolean): boolean {
  if (!glob) return existsSync(resolve(root, path));
  const folder = resolve(root, dirname(`${path}x`));
  const start = path.slice(path.lastIndexOf('/') + 1);
  return existsSync(folder) && readdirSync(folder).some((f) => f.startsWith(start));
}
