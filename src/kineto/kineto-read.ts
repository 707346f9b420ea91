// Reads one rank's PyTorch profiler (Kineto) trace, fed as text chunks, keeping only its GPU side.
// Format: Kineto's libkineto/src/output_json.cpp — "X" events with ts/dur in µs (relative to
// baseTimeNanoseconds), pid = device, tid = stream for GPU activities; `cat` is the activity type
// ("kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "user_annotation", "gpu_user_annotation", …).
import { ScanError, TraceScanner, type ScanSink } from './json-scan.ts';
import type { GpuWork, ProcessGroupInfo, StepMark } from './kineto-types.ts';
import { assignSteps, type SliceDraft, type StepRange } from './kineto-steps.ts';
import { isNcclKernel, ncclArgKeys, ncclCall, type NcclCall } from './nccl-kernel.ts';

/** A trace that cannot be used; the message names the file, what is missing and what to do. */
export class TraceImportError extends Error {}

/** One file read, before the ranks are put on one clock (times in µs since the file's base time). */
export interface FileRead {
  readonly file: string;
  readonly dist?: { rank?: number; worldSize?: number; backend?: string; groups: ProcessGroupInfo[] };
  /** baseTimeNanoseconds (exact), or null when the trace has none (older traces: ts are absolute µs). */
  readonly baseNs: bigint | null;
  readonly deviceNames: ReadonlyMap<number, string>;
  readonly slices: SliceDraft[];
  readonly steps: StepMark[];
  readonly stats: {
    chars: number;
    events: number;
    dropped: Record<string, number>;
    oversized: number;
    untimed: number;
    malformed: number;
  };
  readonly notes: string[];
}

const gpuCat = /"cat"\s*:\s*"(?:kernel|Kernel|gpu_memcpy|gpu_memset|cuda_runtime|cuda_driver)"/;
const catOf = /"cat"\s*:\s*"([^"\\]{0,64})"/;
const stepName = /^ProfilerStep#(\d+)$/;

interface RawEvent {
  ph?: unknown;
  cat?: unknown;
  name?: unknown;
  pid?: unknown;
  tid?: unknown;
  ts?: unknown;
  dur?: unknown;
  args?: Record<string, unknown>;
}

const finite = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const int = (v: unknown): number | undefined => {
  const n = typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : finite(v);
  return n !== undefined && Number.isInteger(n) ? n : undefined;
};

/**
 * `push(text)` the file's text in order, then `finish()`. Keeps GPU kernels, memcpy, memset,
 * ProfilerStep#N ranges and the correlation → launch time of CUDA runtime calls; counts and drops
 * everything else (CPU ops, Python frames, flows, metadata). Kernel names are interned.
 */
export class KinetoReader implements ScanSink {
  private readonly scanner = new TraceScanner(this);
  private readonly names = new Map<string, string>();
  /** Equal NCCL calls share one object (a step repeats the same few collectives). */
  private readonly calls = new Map<string, NcclCall>();
  private readonly launches = new Map<number, number>();
  private readonly cpuSteps: StepRange[] = [];
  private readonly gpuSteps: StepRange[] = [];
  private readonly slices: SliceDraft[] = [];
  private readonly members = new Map<string, string>();
  private readonly dropped: Record<string, number> = {};
  private events = 0;
  private untimed = 0;
  private malformed = 0;

  constructor(readonly file: string) {}

  /** Characters read so far. */
  get chars(): number {
    return this.scanner.chars;
  }

  push(text: string): void {
    try {
      this.scanner.push(text);
    } catch (e) {
      throw this.wrap(e);
    }
  }

  member(key: string, json: string): void {
    this.members.set(key, json);
  }

  event(json: string): void {
    this.events++;
    const isStep = json.includes('ProfilerStep#');
    if (!isStep && !gpuCat.test(json)) {
      const cat = catOf.exec(json)?.[1] ?? '(no cat)';
      this.dropped[cat] = (this.dropped[cat] ?? 0) + 1;
      return;
    }
    let e: RawEvent;
    try {
      e = JSON.parse(json) as RawEvent;
    } catch {
      this.malformed++;
      return;
    }
    if (e === null || typeof e !== 'object' || e.ph !== 'X') {
      this.dropped['(not a complete event)'] = (this.dropped['(not a complete event)'] ?? 0) + 1;
      return;
    }
    const ts = finite(e.ts);
    const dur = finite(e.dur);
    const cat = typeof e.cat === 'string' ? e.cat : '';
    const name = typeof e.name === 'string' ? e.name : '';
    if (ts === undefined || dur === undefined || dur < 0) {
      this.untimed++;
      return;
    }
    const step = stepName.exec(name);
    if (step) {
      (cat === 'gpu_user_annotation' ? this.gpuSteps : this.cpuSteps).push({
        step: Number(step[1]),
        t0: ts,
        t1: ts + dur,
      });
      return;
    }
    if (cat === 'cuda_runtime' || cat === 'cuda_driver') {
      const corr = int(e.args?.['correlation']);
      if (corr !== undefined) this.launches.set(corr, ts);
      return;
    }
    const work: GpuWork | undefined =
      cat === 'gpu_memcpy'
        ? 'memcpy'
        : cat === 'gpu_memset'
          ? 'memset'
          : cat === 'kernel' || cat === 'Kernel'
            ? 'compute'
            : undefined;
    if (!work) {
      this.dropped[cat] = (this.dropped[cat] ?? 0) + 1;
      return;
    }
    const args = e.args;
    const nccl = work === 'compute' && (isNcclKernel(name) || typeof args?.['Collective name'] === 'string');
    let interned = this.names.get(name);
    if (interned === undefined) this.names.set(name, (interned = name));
    const corr = int(args?.['correlation']);
    const bytes = int(args?.['bytes']);
    this.slices.push({
      rank: 0,
      work: nccl ? 'comm' : work,
      device: int(args?.['device']) ?? int(e.pid) ?? 0,
      gpuStream: int(args?.['stream']) ?? int(e.tid) ?? 0,
      name: interned,
      t0: ts,
      t1: ts + dur,
      ...(nccl && { nccl: this.call(interned, args) }),
      ...(work !== 'compute' && bytes !== undefined && { bytes }),
      ...(corr !== undefined && { corr }),
    });
  }

  private call(name: string, args: Record<string, unknown> | undefined): NcclCall {
    const key = `${name}\u0000${ncclArgKeys.map((k) => String(args?.[k] ?? '')).join('\u0000')}`;
    let c = this.calls.get(key);
    if (!c) this.calls.set(key, (c = ncclCall(name, args)));
    return c;
  }

  /** Ends the file: checks it is a Kineto trace with GPU kernels and assigns slices to steps. */
  finish(): FileRead {
    try {
      this.scanner.end();
    } catch (e) {
      throw this.wrap(e);
    }
    const notes: string[] = [];
    if (this.members.has('traceEvents'))
      throw new TraceImportError(`${this.file}: "traceEvents" is not an array of events.`);
    if (!this.scanner.eventsArray) {
      const keys = [...this.members.keys()];
      throw new TraceImportError(
        `${this.file}: no "traceEvents" array, so this is not a PyTorch profiler (Kineto) trace (top-level keys: ${keys.length ? keys.join(', ') : 'none'}). Export it with prof.export_chrome_trace(...) or torch.profiler.tensorboard_trace_handler.`,
      );
    }
    if (!this.slices.some((s) => s.work === 'compute' || s.work === 'comm')) {
      throw new TraceImportError(
        `${this.file}: ${this.events} events but no GPU kernels (cat "kernel"), so there is nothing to analyse. Profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] so that the trace records the GPU side.`,
      );
    }
    const dropped = this.scanner.skipped.members;
    if (dropped.length) notes.push(`top-level members too long to read, skipped: ${dropped.join(', ')}.`);
    if (this.malformed) notes.push(`${this.malformed} GPU events were not valid JSON and were skipped.`);
    if (this.untimed) notes.push(`${this.untimed} complete events had no finite ts/dur and were skipped.`);
    if (this.scanner.skipped.events)
      notes.push(`${this.scanner.skipped.events} events over 1 MiB of text were skipped.`);
    const steps = assignSteps(this.slices, this.gpuSteps, this.cpuSteps, this.launches, notes);
    for (const s of this.slices) delete s.corr;
    this.launches.clear();
    return {
      file: this.file,
      ...this.distributed(notes),
      baseNs: this.baseNs(),
      deviceNames: this.deviceNames(),
      slices: this.slices,
      steps,
      stats: {
        chars: this.chars,
        events: this.events,
        dropped: this.dropped,
        oversized: this.scanner.skipped.events,
        untimed: this.untimed,
        malformed: this.malformed,
      },
      notes,
    };
  }

  private wrap(e: unknown): Error {
    if (e instanceof ScanError) return new TraceImportError(`${this.file}: ${e.message}`);
    return e instanceof Error ? e : new Error(String(e));
  }

  private parsed(key: string): unknown {
    const text = this.members.get(key);
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return undefined;
    }
  }

  private distributed(notes: string[]): Pick<FileRead, 'dist'> {
    const d = this.parsed('distributedInfo');
    if (!d || typeof d !== 'object') return {};
    const o = d as Record<string, unknown>;
    const rank = int(o['rank']);
    if (rank === undefined) notes.push('distributedInfo has no rank.');
    const groups = Array.isArray(o['pg_config'])
      ? (o['pg_config'] as Record<string, unknown>[]).map((g) => ({
          name: String(g['pg_name'] ?? ''),
          desc: String(g['pg_desc'] ?? ''),
          size: int(g['pg_size']) ?? 0,
          ranks: String(g['ranks'] ?? ''),
        }))
      : [];
    const worldSize = int(o['world_size']);
    return {
      dist: {
        ...(rank !== undefined && { rank }),
        ...(worldSize !== undefined && { worldSize }),
        ...(typeof o['backend'] === 'string' && { backend: o['backend'] }),
        groups,
      },
    };
  }

  private baseNs(): bigint | null {
    const text = this.members.get('baseTimeNanoseconds')?.trim();
    return text && /^\d+$/.test(text) ? BigInt(text) : null;
  }

  private deviceNames(): Map<number, string> {
    const out = new Map<number, string>();
    const props = this.parsed('deviceProperties');
    if (Array.isArray(props))
      for (const p of props as Record<string, unknown>[]) {
        const id = int(p?.['id']);
        if (id !== undefined && typeof p['name'] === 'string') out.set(id, p['name']);
      }
    return out;
  }
}
