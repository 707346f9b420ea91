// A system file: one machine as JSON (`npm run project -- --system file:PATH`), the catalog's
// SystemSpec with its GPU by catalog name, and what calibration measured on it.
import { quoted } from '../core/quote.ts';
import type { FittedCollective, MeasuredCollectiveOp, MeasuredGemm } from '../hardware/calibrated-rates.ts';
import { gpus, type GemmPrecision, type GpuName } from '../hardware/gpus.ts';
import type { Interconnect } from '../hardware/interconnect.ts';
import type { FabricKind, HostSide, InterNode, SystemSpec } from '../hardware/systems.ts';

/** The name `npm run project -- --calibrate DIR` writes the system file under, and the trace view takes it by. */
export const calibratedSystemFile = 'calibrated-system.json';

/** The file's kind and version: a reader refuses what it does not know. */
export const systemFileKind = 'tp-playground-system';
export const systemFileVersion = 1;

/** The JSON text of `system` (its GPU must be a catalog GPU). */
export function systemFileText(system: SystemSpec): string {
  const gpu = Object.keys(gpus).find(
    (n) => gpus[n as GpuName] === system.gpu || gpus[n as GpuName].name === system.gpu.name,
  );
  if (!gpu) throw new Error(`system ${quoted(system.name)}: its GPU ${quoted(system.gpu.name)} is not in the catalog.`);
  const { gpu: _gpu, ...rest } = system;
  return `${JSON.stringify({ kind: systemFileKind, version: systemFileVersion, ...rest, gpu }, null, 2)}\n`;
}

const collectiveOps: readonly MeasuredCollectiveOp[] = [
  'allReduce',
  'allGather',
  'reduceScatter',
  'broadcast',
  'sendRecv',
  'allToAll',
];
const precisions: readonly GemmPrecision[] = ['fp32', 'fp16', 'bf16', 'fp8'];
const fabricKinds: readonly FabricKind[] = ['infiniband', 'roce'];

type Json = Record<string, unknown>;

/** Field readers that throw naming the path and what was expected. */
function reader(source: string) {
  const fail = (path: string, what: string, got: unknown): never => {
    const shown =
      typeof got === 'string' ? quoted(got) : got === undefined ? 'nothing' : JSON.stringify(got).slice(0, 60);
    throw new Error(`${source}: ${path} must be ${what}, got ${shown}.`);
  };
  const obj = (v: unknown, path: string): Json =>
    typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : fail(path, 'an object', v);
  const str = (o: Json, k: string, path: string): string =>
    typeof o[k] === 'string' ? (o[k] as string) : fail(`${path}.${k}`, 'a string', o[k]);
  const num = (o: Json, k: string, path: string, min: number, strict = false): number => {
    const v = o[k];
    return typeof v === 'number' && Number.isFinite(v) && (strict ? v > min : v >= min)
      ? v
      : fail(`${path}.${k}`, `a number ${strict ? '>' : '≥'} ${min}`, v);
  };
  const oneOf = <T extends string>(o: Json, k: string, path: string, allowed: readonly T[]): T =>
    allowed.includes(o[k] as T) ? (o[k] as T) : fail(`${path}.${k}`, `one of ${allowed.join(', ')}`, o[k]);
  const list = (o: Json, k: string, path: string): unknown[] | undefined =>
    o[k] === undefined ? undefined : Array.isArray(o[k]) ? (o[k] as unknown[]) : fail(`${path}.${k}`, 'a list', o[k]);
  return { fail, obj, str, num, oneOf, list };
}

/**
 * The machine in a system file's text. Throws naming the field and what it must be: the kind and
 * version, a catalog GPU, GPUs per node 1–1024, bandwidths > 0, latencies ≥ 0, every fit and
 * measured GEMM complete.
 */
export function parseSystemFile(text: string, source = 'system file'): SystemSpec {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new Error(
      `${source}: not JSON (${(e as Error).message}); write it with npm run project -- --calibrate DIR.`,
      {
        cause: e,
      },
    );
  }
  const r = reader(source);
  const o = r.obj(raw, 'the file');
  if (o.kind !== systemFileKind || o.version !== systemFileVersion)
    r.fail('kind and version', `"${systemFileKind}" and ${systemFileVersion}`, [o.kind, o.version]);
  const gpuName = r.str(o, 'gpu', 'file');
  if (!Object.hasOwn(gpus, gpuName)) r.fail('file.gpu', `a catalog GPU (${Object.keys(gpus).join(', ')})`, gpuName);
  const perNode = r.num(o, 'gpusPerNode', 'file', 1);
  if (!Number.isInteger(perNode) || perNode > 1024)
    r.fail('file.gpusPerNode', 'a whole number from 1 to 1024', perNode);
  const fits = (parent: Json, path: string): { fitted?: readonly FittedCollective[] } => {
    const l = r.list(parent, 'fitted', path);
    if (!l) return {};
    return {
      fitted: l.map((v, i) => {
        const p = `${path}.fitted[${i}]`;
        const f = r.obj(v, p);
        return {
          op: r.oneOf(f, 'op', p, collectiveOps),
          ranks: r.num(f, 'ranks', p, 2),
          ranksPerNode: r.num(f, 'ranksPerNode', p, 1),
          alphaUs: r.num(f, 'alphaUs', p, 0),
          busGBps: r.num(f, 'busGBps', p, 0, true),
          points: r.num(f, 'points', p, 2),
          maxRelError: r.num(f, 'maxRelError', p, 0),
          source: r.str(f, 'source', p),
        };
      }),
    };
  };
  const ic = r.obj(o.intra, 'file.intra');
  const intra: Interconnect = {
    name: r.str(ic, 'name', 'intra'),
    label: r.str(ic, 'label', 'intra'),
    alphaUs: r.num(ic, 'alphaUs', 'intra', 0),
    busGBps: r.num(ic, 'busGBps', 'intra', 0, true),
    source: r.str(ic, 'source', 'intra'),
    ...(ic.ncclChannels !== undefined && { ncclChannels: r.num(ic, 'ncclChannels', 'intra', 1) }),
    ...fits(ic, 'intra'),
  };
  const nc = r.obj(o.inter, 'file.inter');
  const inter: InterNode = {
    label: r.str(nc, 'label', 'inter'),
    fabric: r.oneOf(nc, 'fabric', 'inter', fabricKinds),
    nicGBps: r.num(nc, 'nicGBps', 'inter', 0, true),
    nicsPerNode: r.num(nc, 'nicsPerNode', 'inter', 1),
    alphaUs: r.num(nc, 'alphaUs', 'inter', 0),
    source: r.str(nc, 'source', 'inter'),
    ...fits(nc, 'inter'),
  };
  const gemms = r.list(o, 'measuredGemms', 'file');
  const measuredGemms: MeasuredGemm[] | undefined = gemms?.map((v, i) => {
    const p = `measuredGemms[${i}]`;
    const g = r.obj(v, p);
    const whole = (k: string): number => {
      const x = r.num(g, k, p, 1);
      return Number.isInteger(x) ? x : r.fail(`${p}.${k}`, 'a whole number', x);
    };
    return {
      M: whole('M'),
      N: whole('N'),
      K: whole('K'),
      batch: whole('batch'),
      precision: r.oneOf(g, 'precision', p, precisions),
      us: r.num(g, 'us', p, 0, true),
    };
  });
  return {
    name: r.str(o, 'name', 'file'),
    label: r.str(o, 'label', 'file'),
    gpu: gpus[gpuName as GpuName],
    gpusPerNode: perNode,
    intra,
    inter,
    collectiveBaseUs: r.num(o, 'collectiveBaseUs', 'file', 0),
    source: r.str(o, 'source', 'file'),
    ...(measuredGemms && { measuredGemms }),
    ...(o.host !== undefined && { host: hostOf(r, o.host) }),
  };
}

/** A system file's optional host side (SystemSpec.host): link and DRAM bandwidth per GPU > 0, and a source. */
function hostOf(r: ReturnType<typeof reader>, v: unknown): HostSide {
  const h = r.obj(v, 'file.host');
  return {
    linkGBps: r.num(h, 'linkGBps', 'host', 0, true),
    dramGBps: r.num(h, 'dramGBps', 'host', 0, true),
    source: r.str(h, 'source', 'host'),
  };
}
