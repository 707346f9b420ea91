import type { TraceEvent } from '../core/trace-event.ts';
import type { Interval } from '../schedule/intervals.ts';
import type { ScheduledEvent } from '../schedule/schedule.ts';

/**
 * Chrome trace-event JSON as DESIGN.md specifies it (Trace Event Format, "JSON Object Format"):
 * `ph:"M"` metadata names processes and threads; `ph:"X"` complete events carry ts and dur in µs.
 */
export interface PerfettoEvent {
  readonly ph: 'M' | 'X';
  readonly name: string;
  readonly pid: number;
  readonly tid: number;
  readonly ts?: number;
  readonly dur?: number;
  readonly cat?: string;
  readonly args: Readonly<Record<string, string | number | boolean | readonly number[]>>;
}

/** The whole document: `{"displayTimeUnit":"ms","traceEvents":[…]}`. */
export interface PerfettoTrace {
  readonly displayTimeUnit: 'ms';
  readonly traceEvents: readonly PerfettoEvent[];
}

/** A rank's exposed communication interval (ms), drawn on its own thread. */
export interface ExposedSlice extends Interval {
  readonly rank: number;
  readonly op: string;
}

/** Thread ids: compute, comm and exposed lanes are 1, 2, 3; extra lanes for overlapping slices get 11, 12, … (compute), 21, … (comm), 31, … */
const laneBase = { compute: 1, comm: 2, exposed: 3 } as const;
type Lane = keyof typeof laneBase;
const tidOf = (lane: Lane, k: number): number => (k === 0 ? laneBase[lane] : laneBase[lane] * 10 + k);

/** ms → integer ns, so that touching slices stay touching after the µs conversion. */
const ns = (ms: number): number => Math.round(ms * 1e6);

interface Placed {
  readonly lane: Lane;
  readonly t0: number;
  readonly t1: number;
  readonly name: string;
  readonly rank: number;
  readonly args: PerfettoEvent['args'];
}

const isScheduled = (e: TraceEvent): e is ScheduledEvent => 'opIndex' in e;

function argsOf(e: TraceEvent): PerfettoEvent['args'] {
  const s: Partial<ScheduledEvent> = isScheduled(e) ? e : {};
  const coll = s.collective;
  return {
    shape: s.shapeLabel ?? `[${e.shape.join(', ')}]`,
    ...(e.flops !== undefined && { flops: e.flops }),
    bytes: e.bytes,
    ...(s.phase !== undefined && { pass: s.phase }),
    ...(s.role !== undefined && { role: s.role, split: s.split, megatron: s.megatron }),
    ...(s.weight !== undefined && { weight: s.weight }),
    ...(s.gemm && { M: s.gemm.M, N: s.gemm.N, K: s.gemm.K, batch: s.gemm.batch }),
    ...(coll && {
      collective: coll.op,
      groupSize: coll.groupSize,
      payloadBytes: coll.payloadBytes,
      ringBytesSent: coll.ringBytesSent,
      mapping: coll.mapping,
    }),
    ...(!coll &&
      e.comm && {
        collective: e.op,
        groupSize: e.comm.groupSize,
        sentBytes: e.comm.sentBytes,
        transport: e.comm.transport,
        ...(e.comm.tensor !== undefined && { tensor: e.comm.tensor }),
      }),
    ...(e.dpSync && {
      dpSync: e.dpSync.sync,
      bucket: `${e.dpSync.bucket + 1} of ${e.dpSync.buckets}`,
      bucketParams: e.dpSync.params.join(', '),
      bucketElems: e.dpSync.numel,
      overlapped: e.dpSync.overlapped,
      optimizerStep: e.dpSync.step,
    }),
    ...(e.p2p && {
      p2p: `${e.p2p.kind} of ${e.p2p.carries}`,
      fromRank: e.p2p.from,
      toRank: e.p2p.to,
      fromStage: e.p2p.fromStage,
      toStage: e.p2p.toStage,
      microBatch: e.p2p.microBatch,
      tensor: e.p2p.tensor,
    }),
    ...(e.pipelinePass && {
      pass: e.pipelinePass.pass,
      stage: e.pipelinePass.stage,
      chunk: e.pipelinePass.chunk,
      microBatch: e.pipelinePass.microBatch,
      ...(e.pipelinePass.liveBytes !== undefined && { liveBytes: e.pipelinePass.liveBytes }),
    }),
    ...(s.waitMs !== undefined && e.stream === 'comm' && { waitMs: s.waitMs }),
  };
}

/** Greedy lanes per (rank, lane): a slice goes to the first sub-thread whose last slice ended by its start. */
function assignTids(slices: readonly Placed[]): number[] {
  const order = slices
    .map((_, i) => i)
    .sort((a, b) => ns(slices[a]!.t0) - ns(slices[b]!.t0) || ns(slices[b]!.t1) - ns(slices[a]!.t1));
  const ends = new Map<string, number[]>();
  const tids: number[] = [];
  for (const i of order) {
    const s = slices[i]!;
    const k0 = `${s.rank}:${s.lane}`;
    const lanes = ends.get(k0) ?? [];
    let k = lanes.findIndex((end) => end <= ns(s.t0));
    if (k < 0) k = lanes.length;
    lanes[k] = ns(s.t1);
    ends.set(k0, lanes);
    tids[i] = tidOf(s.lane, k);
  }
  return tids;
}

/**
 * The Perfetto/Chrome JSON of per-rank events (a schedule or a measured trace), one process per
 * rank (pid = rank + 1, "rank N"), threads "compute", "comm" and "exposed". Slices that would
 * partially overlap on a thread go to extra threads ("compute 2", …). ts = (t0 − originMs)·1000 µs;
 * originMs defaults to the earliest t0.
 */
export function toPerfetto(
  events: readonly TraceEvent[],
  exposed: readonly ExposedSlice[] = [],
  originMs?: number,
): PerfettoTrace {
  const starts = [...events.map((e) => e.t0), ...exposed.map((x) => x.t0)];
  const origin = originMs ?? (starts.length ? starts.reduce((a, b) => Math.min(a, b)) : 0);
  const slices: Placed[] = [
    ...events.map((e) => ({
      lane: e.stream,
      t0: e.t0 - origin,
      t1: e.t1 - origin,
      name: e.op,
      rank: e.rank,
      args: argsOf(e),
    })),
    ...exposed.map((x) => ({
      lane: 'exposed' as const,
      t0: x.t0 - origin,
      t1: x.t1 - origin,
      name: `${x.op} (exposed)`,
      rank: x.rank,
      args: { exposedMs: x.t1 - x.t0 },
    })),
  ];
  const tids = assignTids(slices);
  const meta: PerfettoEvent[] = [];
  const named = new Set<string>();
  const ranks = [...new Set(slices.map((s) => s.rank))].sort((a, b) => a - b);
  for (const r of ranks) {
    meta.push({ ph: 'M', name: 'process_name', pid: r + 1, tid: 0, args: { name: `rank ${r}` } });
    meta.push({ ph: 'M', name: 'process_sort_index', pid: r + 1, tid: 0, args: { sort_index: r } });
  }
  slices.forEach((s, i) => {
    const tid = tids[i]!;
    const k = `${s.rank}:${tid}`;
    if (named.has(k)) return;
    named.add(k);
    const extra = tid > 9 ? ` ${(tid % 10) + 1}` : '';
    meta.push({ ph: 'M', name: 'thread_name', pid: s.rank + 1, tid, args: { name: `${s.lane}${extra}` } });
    meta.push({ ph: 'M', name: 'thread_sort_index', pid: s.rank + 1, tid, args: { sort_index: tid } });
  });
  const xs: PerfettoEvent[] = slices.map((s, i) => {
    const t0 = ns(s.t0);
    return {
      ph: 'X',
      name: s.name,
      cat: s.lane,
      pid: s.rank + 1,
      tid: tids[i]!,
      ts: t0 / 1000,
      dur: (ns(s.t1) - t0) / 1000,
      args: s.args,
    };
  });
  return { displayTimeUnit: 'ms', traceEvents: [...meta, ...xs] };
}

/** Two ph:"X" slices on one (pid, tid) that overlap without one containing the other. */
export interface PartialOverlap {
  readonly pid: number;
  readonly tid: number;
  readonly a: string;
  readonly b: string;
}

/**
 * The partial overlaps of a Chrome/Perfetto trace (Perfetto drops such slices); [] when every
 * thread's slices are disjoint or nested. Compares in integer ns (ts, dur in µs rounded to 1e-3).
 */
export function partialOverlaps(trace: {
  readonly traceEvents: readonly {
    readonly ph: string;
    readonly pid: number;
    readonly tid: number;
    readonly name: string;
    readonly ts?: number;
    readonly dur?: number;
  }[];
}): PartialOverlap[] {
  const threads = new Map<string, { name: string; t0: number; t1: number; pid: number; tid: number }[]>();
  for (const e of trace.traceEvents) {
    if (e.ph !== 'X') continue;
    const t0 = Math.round((e.ts ?? 0) * 1000);
    const list = threads.get(`${e.pid}:${e.tid}`) ?? [];
    list.push({ name: e.name, t0, t1: t0 + Math.round((e.dur ?? 0) * 1000), pid: e.pid, tid: e.tid });
    threads.set(`${e.pid}:${e.tid}`, list);
  }
  const out: PartialOverlap[] = [];
  for (const list of threads.values()) {
    list.sort((a, b) => a.t0 - b.t0 || b.t1 - a.t1);
    const open: typeof list = [];
    for (const s of list) {
      while (open.length && open[open.length - 1]!.t1 <= s.t0) open.pop();
      const top = open[open.length - 1];
      if (top && s.t1 > top.t1) out.push({ pid: s.pid, tid: s.tid, a: top.name, b: s.name });
      else open.push(s);
    }
  }
  return out;
}

/** The export of a schedule: its events plus each collective's exposed parts on the exposed thread. */
export function timelineToPerfetto(tl: { readonly events: readonly ScheduledEvent[] }): PerfettoTrace {
  const exposed = tl.events.flatMap((e) => e.exposed.map((x) => ({ rank: e.rank, op: e.op, t0: x.t0, t1: x.t1 })));
  return toPerfetto(tl.events, exposed, 0);
}
