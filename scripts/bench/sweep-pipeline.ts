// `npm run sweep -- --pp 2 --dp 2 --micro-batches 4 --schedule 1f1b [--json]`: one pipeline × data-parallel
// run on a mesh of rank workers in headless Chromium (src/session/pipeline-sweep.ts), printed top to
// bottom or as JSON. Every setting is checked (src/parallel/pipeline-settings.ts) before a browser starts.
import type { RawSettings } from '../../src/parallel/config-parse.ts';
import { configFromSettings, parseDegrees } from '../../src/parallel/config-parse.ts';
import { pipelineSettings, type PipelineSettings } from '../../src/parallel/pipeline-settings.ts';
import { validateConfig } from '../../src/parallel/validate.ts';
import type { PipelineSweepReport } from '../../src/session/pipeline-sweep.ts';
import { exitAfterFlush } from '../cli/exit-after-flush.ts';
import { printPipelineSweep } from './sweep-pipeline-print.ts';

/** The sweep's flags that this mode reads. */
export interface PipelineFlagValues {
  readonly tp: string;
  readonly sp: boolean;
  readonly json: boolean;
  readonly trace?: string;
  readonly dump?: string;
  readonly pp?: string;
  readonly dp?: string;
  readonly 'micro-batches'?: string;
  readonly schedule?: string;
  readonly vpp?: string;
  readonly layers?: string;
  readonly 'global-batch'?: string;
  readonly 'distributed-optimizer': boolean;
  readonly baseline: boolean;
}

/** Whether the command line asks for a pipeline run (any of its flags given). */
export function pipelineFlagsGiven(v: PipelineFlagValues): boolean {
  return (
    [v.pp, v.dp, v['micro-batches'], v.schedule, v.vpp, v.layers, v['global-batch']].some((x) => x !== undefined) ||
    v['distributed-optimizer'] ||
    v.baseline
  );
}

/** The run the flags ask for, or a thrown message naming the flag, the rule and the legal values. */
export function pipelineFromFlags(v: PipelineFlagValues, raw: RawSettings): PipelineSettings {
  const degrees = parseDegrees(v.tp);
  if (degrees.length !== 1)
    throw new Error(
      `--tp: a pipeline run takes one TP degree (the mesh is tp × pp × dp), got ${degrees.join(',')}; write e.g. --tp 2.`,
    );
  if (v.trace !== undefined || v.dump !== undefined)
    throw new Error("--trace and --dump are the TP sweep's; a pipeline run prints its trace summary (leave them out).");
  const layer = { ...configFromSettings(raw, degrees[0]), sp: v.sp };
  const checked = validateConfig(layer);
  if (!checked.ok) throw new Error(checked.errors.map((e) => e.message).join(' '));
  return pipelineSettings(
    {
      ...(v.pp !== undefined && { pp: v.pp }),
      ...(v.dp !== undefined && { dp: v.dp }),
      ...(v['micro-batches'] !== undefined && { m: v['micro-batches'] }),
      ...(v.schedule !== undefined && { schedule: v.schedule }),
      ...(v.vpp !== undefined && { vpp: v.vpp }),
      ...(v.layers !== undefined && { layers: v.layers }),
      ...(v['global-batch'] !== undefined && { gbatch: v['global-batch'] }),
      distributedOptimizer: v['distributed-optimizer'],
    },
    layer,
  );
}

/** Checks the flags (exit 2 with the message on a refusal), runs the pipeline, prints it; exits 0 when the oracle passes, else 1. */
export async function sweepPipeline(
  v: PipelineFlagValues,
  raw: RawSettings,
  fail: (message: string) => never,
): Promise<never> {
  let settings: PipelineSettings;
  try {
    settings = pipelineFromFlags(v, raw);
  } catch (e) {
    fail((e as Error).message);
  }
  // Loaded only now: Vite and Playwright take seconds to import, and a refusal above needs neither.
  const { runInBrowser } = await import('../device/browser-run.ts');
  const report = await runInBrowser<PipelineSweepReport>(
    '/src/session/pipeline-sweep.ts',
    'runPipelineSweep',
    { settings, baseline: v.baseline },
    { onProgress: (line) => process.stderr.write(`${line}\n`) },
  );
  if (v.json) console.log(JSON.stringify(report, null, 2));
  else printPipelineSweep(report);
  return exitAfterFlush(report.oracle.pass && (report.baseline?.oraclePass ?? true) ? 0 : 1);
}
