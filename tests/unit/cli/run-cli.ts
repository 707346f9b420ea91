// Runs one of the project's CLIs as a user does (`npx tsx scripts/<room>/<name>.ts …`) and returns its exit code and output.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

/** The outcome of one CLI run: exit code (0 on success), stdout and stderr. */
export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** `npx tsx <script> ...args` from the repository root. */
export async function runCli(script: string, ...args: string[]): Promise<CliRun> {
  try {
    const { stdout, stderr } = await promisify(execFile)('npx', ['tsx', script, ...args]);
    return { code: 0, stdout, stderr };
  } catch (e) {
    const x = e as CliRun;
    return { code: x.code, stdout: x.stdout, stderr: x.stderr };
  }
}
