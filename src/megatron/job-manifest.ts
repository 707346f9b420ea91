// The manifest a job bundle writes beside the job's traces (megatron-job.json): what the job ran, so
// that its PyTorch profiler traces are matched to the projection of the same configuration with no
// pasting (trace view, `npm run trace -- DIR --job DIR`).
import { parseDtype, type TrainDtype } from '../hardware/dtype.ts';
import { parseSystem, type SystemSpec } from '../hardware/systems.ts';
import { parseMegatronCommand, type ParsedCommand } from './megatron-command.ts';

/** The manifest's file name, in the bundle and in the trace directory. */
export const jobManifestFile = 'megatron-job.json';

/** The manifest's format tag; a reader refuses any other. */
export const jobManifestKind = 'tp-playground/megatron-job@1';

/** What a bundled Megatron-LM job is: enough to re-project it and to find its traces. */
export interface JobManifest {
  readonly kind: typeof jobManifestKind;
  readonly name: string;
  /** The Megatron-LM release the command is written and checked for. */
  readonly megatron: { readonly repository: string; readonly tag: string; readonly commit: string };
  /** The catalog system the projection uses (src/hardware/systems.ts name, or custom:…). */
  readonly system: string;
  readonly dtype: TrainDtype;
  readonly nodes: number;
  readonly gpusPerNode: number;
  /** The launch as one shell command (torchrun over all nodes, pretrain_gpt.py, every flag, mock data). */
  readonly command: string;
  /** Where the job writes its traces and which steps they cover (ProfilerStep#N, N = stepStart … stepEnd − 1). */
  readonly profile: { readonly traceDir: string; readonly stepStart: number; readonly stepEnd: number };
}

/** A manifest's text, checked: throws an Error saying which field is missing or wrong. */
export function readJobManifest(text: string, file = jobManifestFile): JobManifest {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new Error(`${file}: not JSON (${e instanceof Error ? e.message : String(e)}).`, { cause: e });
  }
  if (typeof raw !== 'object' || raw === null) throw new Error(`${file}: not a job manifest (expected an object).`);
  const o = raw as Record<string, unknown>;
  if (o.kind !== jobManifestKind)
    throw new Error(
      `${file}: kind is ${JSON.stringify(o.kind)}, expected "${jobManifestKind}" (a job bundle's manifest).`,
    );
  const str = (k: string): string => {
    if (typeof o[k] !== 'string' || !o[k]) throw new Error(`${file}: "${k}" must be a non-empty string.`);
    return o[k];
  };
  const whole = (v: unknown, k: string): number => {
    if (!(typeof v === 'number' && Number.isInteger(v) && v >= 0))
      throw new Error(`${file}: "${k}" must be a whole number.`);
    return v;
  };
  const m = o.megatron as Record<string, unknown> | undefined;
  const p = o.profile as Record<string, unknown> | undefined;
  if (!m || typeof m.tag !== 'string' || typeof m.commit !== 'string' || typeof m.repository !== 'string')
    throw new Error(`${file}: "megatron" must name repository, tag and commit.`);
  if (!p || typeof p.traceDir !== 'string')
    throw new Error(`${file}: "profile" must give traceDir, stepStart, stepEnd.`);
  return {
    kind: jobManifestKind,
    name: str('name'),
    megatron: { repository: m.repository, tag: m.tag, commit: m.commit },
    system: str('system'),
    dtype: parseDtype(str('dtype')),
    nodes: whole(o.nodes, 'nodes'),
    gpusPerNode: whole(o.gpusPerNode, 'gpusPerNode'),
    command: str('command'),
    profile: {
      traceDir: p.traceDir,
      stepStart: whole(p.stepStart, 'profile.stepStart'),
      stepEnd: whole(p.stepEnd, 'profile.stepEnd'),
    },
  };
}

/**
 * What the projection needs from a manifest: its command read back (parseMegatronCommand, GPUs =
 * nodes × GPUs per node) and its system. Throws an Error naming what does not parse.
 */
export function manifestProjection(m: JobManifest): { parsed: ParsedCommand; system: SystemSpec } {
  return { parsed: parseMegatronCommand(m.command, m.nodes * m.gpusPerNode), system: parseSystem(m.system) };
}
