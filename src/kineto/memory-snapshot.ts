// Reads PyTorch's CUDA allocator history: the dictionary `torch.cuda.memory._snapshot()` returns (the
// pickle Megatron-LM writes with --record-memory-history to --memory-snapshot-path, training.py:2817 at
// core_v0.19.0), written as JSON with its own field names by the job bundle's memory_snapshot_json.py.
// Format (torch/cuda/memory.py, `_snapshot` docstring): Snapshot { segments: Segment[],
// device_traces: TraceEntry[][] }; Segment { address, total_size, stream, segment_type,
// allocated_size, active_size, blocks }; TraceEntry { action, addr, size, stream, frames, time_us? }
// with action alloc | free_requested | free_completed | segment_alloc | segment_free | segment_map |
// segment_unmap | oom | snapshot | annotate.
import { TraceImportError } from './kineto-read.ts';

/** The allocator actions that move allocated or reserved bytes, and by which sign. */
const allocatedDelta: Readonly<Record<string, 1 | -1>> = { alloc: 1, free_completed: -1 };
const reservedDelta: Readonly<Record<string, 1 | -1>> = {
  segment_alloc: 1,
  segment_free: -1,
  // Expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) map and unmap pages instead.
  segment_map: 1,
  segment_unmap: -1,
};
/** Actions that carry no byte change (kept for the count, skipped for the levels). */
const otherActions = new Set(['free_requested', 'oom', 'snapshot', 'annotate']);

/** One allocator event as the snapshot has it (frames dropped). */
export interface AllocatorEvent {
  readonly action: string;
  readonly size: number;
  readonly stream: number;
  /** µs since the epoch (PyTorch ≥ 2.1 records it); absent in older snapshots. */
  readonly timeUs?: number;
}

/** One device's segments at the moment of the snapshot. */
export interface SnapshotSegment {
  readonly totalSize: number;
  readonly allocatedSize: number;
  readonly stream: number;
}

/** A snapshot read: its segments (all devices) and each device's events, oldest first. */
export interface MemorySnapshot {
  readonly file: string;
  /** The global rank that wrote it (memory_snapshot_json.py --rank), when given. */
  readonly rank?: number;
  readonly segments: readonly SnapshotSegment[];
  readonly deviceTraces: readonly (readonly AllocatorEvent[])[];
}

/** Allocated and reserved bytes after each event of one device, and their peaks. */
export interface MemoryHistory {
  readonly device: number;
  /** Event times in ms from the first event (event index when the snapshot has no times). */
  readonly at: readonly number[];
  readonly timed: boolean;
  readonly allocated: readonly number[];
  readonly reserved: readonly number[];
  readonly peakAllocated: number;
  readonly peakReserved: number;
  /** reserved − allocated at the peak of reserved: cached blocks no tensor uses (fragmentation and cache). */
  readonly cachedAtPeakReserved: number;
  /** The levels before the first recorded event (the history is a ring buffer: it may start mid-run). */
  readonly startAllocated: number;
  readonly startReserved: number;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const bytesField = (o: Record<string, unknown>, key: string, where: string): number => {
  const v = o[key];
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
    throw new TraceImportError(`${where}: "${key}" must be a byte count ≥ 0, got ${JSON.stringify(v)}.`);
  return v;
};

/**
 * Reads the JSON of one snapshot. Throws TraceImportError naming the file and what is missing —
 * a Kineto trace given here, a snapshot taken without history (no device_traces events), an unknown action.
 */
export function readMemorySnapshot(json: unknown, file: string): MemorySnapshot {
  if (!isRecord(json) || !Array.isArray(json.segments) || !Array.isArray(json.device_traces))
    throw new TraceImportError(
      `${file}: not a PyTorch memory snapshot (it needs "segments" and "device_traces", as torch.cuda.memory._snapshot() writes them); ` +
        'convert the pickle with the job bundle\'s "python memory_snapshot_json.py SNAPSHOT.pickle".',
    );
  const segments = json.segments.map((s, i): SnapshotSegment => {
    const where = `${file}: segments[${i}]`;
    if (!isRecord(s)) throw new TraceImportError(`${where} is not an object.`);
    return {
      totalSize: bytesField(s, 'total_size', where),
      allocatedSize: bytesField(s, 'allocated_size', where),
      stream: typeof s.stream === 'number' ? s.stream : 0,
    };
  });
  const deviceTraces = json.device_traces.map((trace, d) => {
    if (!Array.isArray(trace)) throw new TraceImportError(`${file}: device_traces[${d}] is not a list of events.`);
    return trace.map((e, i): AllocatorEvent => {
      const where = `${file}: device_traces[${d}][${i}]`;
      if (!isRecord(e) || typeof e.action !== 'string') throw new TraceImportError(`${where} has no "action".`);
      const { action } = e;
      if (!(action in allocatedDelta || action in reservedDelta || otherActions.has(action)))
        throw new TraceImportError(
          `${where}: unknown action ${JSON.stringify(action)} (known: ${[...Object.keys(allocatedDelta), ...Object.keys(reservedDelta), ...otherActions].join(', ')}).`,
        );
      const size =
        action === 'oom' || action === 'snapshot' || action === 'annotate' ? 0 : bytesField(e, 'size', where);
      const timeUs = typeof e.time_us === 'number' ? e.time_us : undefined;
      return {
        action,
        size,
        stream: typeof e.stream === 'number' ? e.stream : 0,
        ...(timeUs !== undefined && { timeUs }),
      };
    });
  });
  if (!deviceTraces.some((t) => t.length))
    throw new TraceImportError(
      `${file}: the snapshot has no allocator history (device_traces are empty): record it with --record-memory-history ` +
        '(torch.cuda.memory._record_memory_history) before the step.',
    );
  const rank = typeof json.rank === 'number' && Number.isInteger(json.rank) && json.rank >= 0 ? json.rank : undefined;
  return { file, ...(rank !== undefined && { rank }), segments, deviceTraces };
}

/**
 * Allocated and reserved bytes over device `device`'s history. The levels at the end are the
 * snapshot's segments (Σ allocated_size, Σ total_size: the state when it was taken, after the last
 * event); walking the events backwards gives the levels before each, so a history that starts
 * mid-run (the ring buffer kept the last trace_alloc_max_entries events) still has true levels.
 * Segments of every device are summed: Megatron's snapshot holds its rank's one device.
 */
export function memoryHistory(s: MemorySnapshot, device = s.deviceTraces.findIndex((t) => t.length)): MemoryHistory {
  const events = s.deviceTraces[device];
  if (!events?.length)
    throw new TraceImportError(
      `${s.file}: device ${device} has no allocator events (devices with events: ${s.deviceTraces.flatMap((t, d) => (t.length ? [d] : [])).join(', ')}).`,
    );
  const n = events.length;
  const allocated = new Array<number>(n);
  const reserved = new Array<number>(n);
  let a = s.segments.reduce((x, g) => x + g.allocatedSize, 0);
  let r = s.segments.reduce((x, g) => x + g.totalSize, 0);
  for (let i = n - 1; i >= 0; i--) {
    allocated[i] = a;
    reserved[i] = r;
    const e = events[i]!;
    a -= (allocatedDelta[e.action] ?? 0) * e.size;
    r -= (reservedDelta[e.action] ?? 0) * e.size;
  }
  if (a < 0 || r < 0)
    throw new TraceImportError(
      `${s.file}: the events free more than the segments and events allocate (${a} B allocated, ${r} B reserved before the first event): ` +
        'the segments and the history are of different moments; write both from one torch.cuda.memory._snapshot().',
    );
  const timed = events.every((e) => e.timeUs !== undefined);
  const t0 = events[0]!.timeUs ?? 0;
  const at = events.map((e, i) => (timed ? (e.timeUs! - t0) / 1000 : i));
  // Peaks over the start level and the level after each event.
  let [peakA, peakR, cached] = [a, r, r - a];
  for (let i = 0; i < n; i++) {
    peakA = Math.max(peakA, allocated[i]!);
    if (reserved[i]! > peakR) [peakR, cached] = [reserved[i]!, reserved[i]! - allocated[i]!];
  }
  return {
    device,
    at,
    timed,
    allocated,
    reserved,
    peakAllocated: peakA,
    peakReserved: peakR,
    cachedAtPeakReserved: cached,
    startAllocated: a,
    startReserved: r,
  };
}

/** A snapshot read for a view: its file, the rank that wrote it (when given) and its first device's history. */
export interface LoadedSnapshot {
  readonly file: string;
  readonly rank?: number;
  readonly history: MemoryHistory;
}

/** The snapshot in `json` (memory_snapshot_json.py's output) with the history of its device that has events. */
export function loadSnapshot(json: unknown, file: string): LoadedSnapshot {
  const s = readMemorySnapshot(json, file);
  return { file, ...(s.rank !== undefined && { rank: s.rank }), history: memoryHistory(s) };
}
