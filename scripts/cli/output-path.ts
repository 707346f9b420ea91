import { closeSync, existsSync, openSync, statSync, unlinkSync } from 'node:fs';

/**
 * Why `path` cannot be written, or undefined when it can: opens it for appending (creating it if
 * missing, then removing what it created), so a run that ends with a write learns before it
 * starts that the write would fail (a missing folder, a read-only place such as /proc, a folder
 * given as a file, no permission).
 */
export function outputPathProblem(path: string): string | undefined {
  if (!path) return 'the path is empty';
  const existed = existsSync(path);
  if (existed && statSync(path).isDirectory()) return 'it is a directory';
  try {
    closeSync(openSync(path, 'a'));
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
  if (!existed) unlinkSync(path);
  return undefined;
}

/** Exits with status 2 naming the option, the path and the reason when an output path cannot be written. */
export function checkOutputPaths(tool: string, paths: Readonly<Record<string, string | undefined>>): void {
  for (const [option, path] of Object.entries(paths)) {
    if (path === undefined) continue;
    const problem = outputPathProblem(path);
    if (problem) {
      process.stderr.write(`${tool}: cannot write ${option} ${path}: ${problem}. Nothing was run.\n`);
      process.exit(2);
    }
  }
}
