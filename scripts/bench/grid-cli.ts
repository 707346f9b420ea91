// The command line both oracle grids share (npm run sweep -- --moe-grid | --pipeline-grid): whole-number
// size flags with a least value, --json, --help; bad input refused with the grid's usage (exit 2); the
// grid run on rank workers in headless Chromium, printed or as JSON, exit 1 when a point fails.
import { parseArgs } from 'node:util';
import { exitAfterFlush } from '../cli/exit-after-flush.ts';

/** A size flag of a grid: its default and the least whole number it takes. */
export interface GridSizeFlag {
  readonly default: number;
  readonly min: number;
}

/** What a grid's flags gave: its sizes by flag name and --json, with a message per refused flag. */
export interface GridArgs<F extends string> {
  readonly sizes: Record<F, number>;
  readonly json: boolean;
  readonly errors: string[];
}

/**
 * Reads `argv` (less `gridFlag`) for `flags`; on a flag parseArgs refuses, or on --help, prints the usage
 * and exits (2, or 0). A size that is not a whole number ≥ its least is an error in the result (the
 * size keeps its least), so the caller may add its own checks before `refuseGrid`.
 */
export async function parseGridArgs<F extends string>(
  argv: readonly string[],
  gridFlag: string,
  flags: Readonly<Record<F, GridSizeFlag>>,
  usage: string,
): Promise<GridArgs<F>> {
  const names = Object.keys(flags) as F[];
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args: argv.filter((a) => a !== gridFlag),
      options: {
        ...Object.fromEntries(names.map((f) => [f, { type: 'string' as const, default: String(flags[f].default) }])),
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
    }).values;
  } catch (e) {
    process.stderr.write(`sweep: ${(e as Error).message}\n${usage}\n`);
    return exitAfterFlush(2);
  }
  if (values.help) {
    console.log(usage);
    return exitAfterFlush(0);
  }
  const errors: string[] = [];
  const sizes = {} as Record<F, number>;
  for (const f of names) {
    const raw = String(values[f]);
    const v = Number(raw);
    const { min } = flags[f];
    if (Number.isInteger(v) && v >= min) sizes[f] = v;
    else {
      errors.push(`--${f} is "${raw}"; write a whole number ≥ ${min}.`);
      sizes[f] = min;
    }
  }
  return { sizes, json: values.json === true, errors };
}

/** Prints each refusal and the usage; exits 2. */
export function refuseGrid(errors: readonly string[], usage: string): Promise<never> {
  for (const e of errors) process.stderr.write(`sweep: ${e}\n`);
  process.stderr.write(`${usage}\n`);
  return exitAfterFlush(2);
}

/** Runs `fn` of `module` on rank workers in headless Chromium; prints the report or its JSON; exits 0 when every row passed, else 1. */
export async function runGrid<R extends { readonly rows: readonly { readonly ok: boolean }[] }>(
  module: string,
  fn: string,
  args: Record<string, unknown>,
  json: boolean,
  print: (report: R) => void,
): Promise<never> {
  const { runInBrowser } = await import('../device/browser-run.ts');
  const report = await runInBrowser<R>(module, fn, args, {
    onProgress: (line) => process.stderr.write(`${line}\n`),
  });
  if (json) console.log(JSON.stringify(report, null, 2));
  else print(report);
  return exitAfterFlush(report.rows.every((x) => x.ok) ? 0 : 1);
}
