/**
 * Exits once everything written to stdout and stderr has been handed to the OS. `process.exit` alone
 * drops what a pipe has not yet taken (Node writes to pipes asynchronously on POSIX: a `--json` report
 * piped into another program was cut at the pipe's 64 KiB buffer). A write's callback runs after the
 * writes queued before it, so an empty write per stream marks the end.
 */
export async function exitAfterFlush(code: number): Promise<never> {
  const flushed = (s: NodeJS.WriteStream) => new Promise<void>((done) => s.write('', () => done()));
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(code);
}
