// npm run project -- … --tp T --export-job DIR: writes the job bundle (src/megatron/job-bundle.ts) of
// the projected setup at one t to DIR, scripts executable.
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { jobBundle, type BundleFile, type JobSpec } from '../../src/megatron/job-bundle.ts';
import { sweepShapes } from '../../src/calibrate/gemm-shapes.ts';
import { gemmShapesCsv, gemmShapesFile } from '../../src/calibrate/gemm-sweep.ts';
import { gemmSweepScript, gemmSweepScriptFile } from '../../src/calibrate/gemm-sweep-script.ts';
import { defaultKernelOptions } from '../../src/projection/layer/kernel-options.ts';
import type { ProjectArgs } from './project-args.ts';

/** The bundle's spec for `npm run project` arguments; throws unless exactly one t is given. */
export function exportJobSpec(args: ProjectArgs): JobSpec {
  if (args.degrees.length !== 1)
    throw new Error(
      `--export-job writes one job: give one --tp (got ${args.degrees.join(',')}), e.g. --tp ${args.degrees.at(-1)}.`,
    );
  const changed = (Object.keys(defaultKernelOptions) as (keyof typeof defaultKernelOptions)[]).filter(
    (k) => args.kernels[k] !== defaultKernelOptions[k],
  );
  if (changed.length)
    throw new Error(
      `--export-job writes the playground's unfused Llama layer; leave out the kernel flags (${changed.join(', ')}) to export it.`,
    );
  const tp = args.degrees[0]!;
  // The command leaves --attention-backend at Megatron's auto; the bundle's setup is the one its
  // manifest reads back to (the playground's layer, s×s activations kept), as without auto.
  const { flashAttention: _, ...setup } = args.setup;
  return {
    name: `${args.scenario.name}-t${tp}${args.setup.sp && tp > 1 ? '-sp' : ''}`,
    setup: { ...setup, tp },
    dtype: args.dtype,
    system: args.system.name,
    gpusPerNode: args.system.gpusPerNode,
  };
}

/**
 * The GEMM sweep the bundle carries (docs/calibrate.md): gemm-shapes.csv, every GEMM shape the
 * projection prices for the job's rank in its precision, and gemm_sweep.py, which times them.
 */
export async function gemmSweepFiles(args: ProjectArgs, spec: JobSpec): Promise<BundleFile[]> {
  const shapes = await sweepShapes(spec.setup, { system: args.system, dtype: args.dtype, kernels: args.kernels });
  return [
    { path: gemmShapesFile, text: gemmShapesCsv(shapes), executable: false },
    { path: gemmSweepScriptFile, text: gemmSweepScript(), executable: true },
  ];
}

/** Writes the bundle and `extra` files into `dir` (created; files of the same name replaced); returns the paths written. */
export async function writeJobBundle(dir: string, spec: JobSpec, extra: readonly BundleFile[] = []): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const written: string[] = [];
  for (const f of [...jobBundle(spec), ...extra]) {
    const path = join(dir, f.path);
    await writeFile(path, f.text);
    if (f.executable) await chmod(path, 0o755);
    written.push(path);
  }
  return written;
}
