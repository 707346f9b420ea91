// Runs in the bench page (scripts/bench-comm.ts imports it through scripts/browser-run.ts).
import type { CollectiveOp } from '../src/comm/collectives.ts';
import { createCommPool } from '../src/session/pools.ts';
import type { PoolTransport } from '../src/ranks/transport.ts';
import { phaseTime, type TraceEvent } from '../src/core/trace-event.ts';

type BenchOp = Exclude<CollectiveOp, 'barrier'>;

/** One measured configuration: times are medians over iterations of the slowest rank (ms). */
export interface CommBenchRow {
  readonly transport: PoolTransport;
  /** Where the tensors live: host arrays, or GPU buffers (adds read-back and upload). */
  readonly device: 'cpu' | 'gpu';
  /** Host arrays: each result in new memory, or in one array of the caller's reused call after call. */
  readonly result?: HostBenchResult;
  readonly op: BenchOp;
  readonly t: number;
  readonly bytes: number;
  readonly iters: number;
  /**
   * Whole call: [read back →] sync → stage → transport → gather (sab-ring) or unstage
   * (message-port) [→ upload].
   */
  readonly totalMs: number;
  readonly readbackMs: number;
  /** Arrival and fingerprint check (includes waiting for the last rank). */
  readonly syncMs: number;
  /** The input copied into the transport's memory (sab-ring: this rank's slot). */
  readonly stageMs: number;
  /** The ring steps (sab-ring: the reduce-scatter steps, added in place in the slots). */
  readonly transportMs: number;
  /** sab-ring: every piece of the result read from the slot that holds it straight into the result (or the upload). */
  readonly gatherMs: number;
  /** message-port: the result copied out of the ring's buffers. */
  readonly unstageMs: number;
  readonly uploadMs: number;
  /** nccl-tests bus bandwidth (GB/s) of the data movement between ranks (transport + gather) and of the whole call. */
  readonly busGBsTransport: number;
  readonly busGBsTotal: number;
  /** busGBsTransport ÷ the page's single-thread memcpy bandwidth at the same size. */
  readonly ofMemcpy: number;
}

/** Everything one bench run measured. */
export interface CommBenchReport {
  readonly adapter: string;
  readonly crossOriginIsolated: boolean;
  readonly hardwareConcurrency: number;
  /** Single-thread `TypedArray.prototype.set` bandwidth (GB/s) per payload size, in this page. */
  readonly memcpyGBs: Readonly<Record<number, number>>;
  readonly rows: readonly CommBenchRow[];
}

/** Where a host-array result goes in the bench: new memory each call, or the caller's array. */
export type HostBenchResult = 'new' | 'out';

/** Arguments of runCommBench. */
export interface CommBenchArgs {
  readonly degrees: readonly number[];
  readonly sizes: readonly number[];
  readonly transports: readonly PoolTransport[];
  readonly ops: readonly BenchOp[];
  readonly devices: readonly ('cpu' | 'gpu')[];
  /** For host arrays, each of these result modes is measured (GPU results are always new tensors). */
  readonly results: readonly HostBenchResult[];
  /** Timed calls per configuration (default: 64 MiB worth, 3 to 20). */
  readonly iters?: number;
  readonly onProgress?: (line: string) => void;
}

/** nccl-tests bus factor: all-reduce 2(t−1)/t, reduce-scatter and all-gather (t−1)/t, broadcast 1. */
export function busFactor(op: BenchOp, t: number): number {
  if (op === 'allReduce') return (2 * (t - 1)) / t;
  if (op === 'broadcast') return 1;
  return (t - 1) / t;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** GB/s of dst.set(src) for `bytes`: median of ≥ 5 samples, each a batch of copies lasting ≥ 2 ms. */
function memcpyBandwidth(bytes: number): number {
  const src = new Float32Array(bytes / 4).map((_, i) => i);
  const dst = new Float32Array(bytes / 4);
  let batch = 1;
  for (;;) {
    const t0 = performance.now();
    for (let k = 0; k < batch; k++) dst.set(src);
    if (performance.now() - t0 >= 2) break;
    batch *= 2;
  }
  const times: number[] = [];
  const start = performance.now();
  while (times.length < 5 || (performance.now() - start < 200 && times.length < 100)) {
    const t0 = performance.now();
    for (let k = 0; k < batch; k++) dst.set(src);
    times.push((performance.now() - t0) / batch);
  }
  return bytes / median(times) / 1e6;
}

/** Median over iterations of the slowest rank's value of `f`. */
function slowest(events: TraceEvent[], t: number, f: (e: TraceEvent) => number): number {
  const perIter: number[] = [];
  for (let i = 0; i < events.length / t; i++) perIter.push(Math.max(...events.slice(i * t, (i + 1) * t).map(f)));
  return median(perIter);
}

/** Measures each op × size × degree × transport × device, with every phase apart. */
export async function runCommBench(args: CommBenchArgs): Promise<CommBenchReport> {
  const memcpyGBs: Record<number, number> = {};
  for (const bytes of args.sizes) memcpyGBs[bytes] = memcpyBandwidth(bytes);
  const rows: CommBenchRow[] = [];
  let adapter = '';
  for (const transport of args.transports) {
    for (const t of args.degrees) {
      const pool = await createCommPool(t, transport, 60_000, Math.max(...args.sizes));
      adapter = pool.adapters[0];
      try {
        const modes = args.devices.flatMap((device): { device: 'cpu' | 'gpu'; result?: HostBenchResult }[] =>
          device === 'gpu' ? [{ device }] : args.results.map((result) => ({ device, result })),
        );
        for (const { device, result } of modes)
          for (const op of args.ops) {
            for (const bytes of args.sizes) {
              const iters = args.iters ?? Math.max(3, Math.min(20, Math.round((64 << 20) / bytes)));
              const perRank = await pool.run('benchCollective', {
                op,
                device,
                elems: bytes / 4,
                iters,
                warmup: 1,
                ...(result && { result }),
              });
              // Rank r's i-th event is events[i·t + r] after interleaving.
              const events = perRank[0].flatMap((_, i) => perRank.map((evs) => evs[i]));
              const ms = (f: (e: TraceEvent) => number): number => slowest(events, t, f);
              const transportMs = ms((e) => phaseTime(e, 'transport'));
              const gatherMs = ms((e) => phaseTime(e, 'gather'));
              const movingMs = ms((e) => phaseTime(e, 'transport') + phaseTime(e, 'gather'));
              const totalMs = ms((e) => e.t1 - e.t0);
              const bus = (time: number): number => ((bytes / time) * busFactor(op, t)) / 1e6;
              const row: CommBenchRow = {
                transport,
                device,
                ...(result && { result }),
                op,
                t,
                bytes,
                iters,
                totalMs,
                transportMs,
                gatherMs,
                readbackMs: ms((e) => phaseTime(e, 'readback')),
                syncMs: ms((e) => phaseTime(e, 'sync')),
                stageMs: ms((e) => phaseTime(e, 'stage')),
                unstageMs: ms((e) => phaseTime(e, 'unstage')),
                uploadMs: ms((e) => phaseTime(e, 'upload')),
                busGBsTransport: bus(movingMs),
                busGBsTotal: bus(totalMs),
                ofMemcpy: bus(movingMs) / memcpyGBs[bytes],
              };
              rows.push(row);
              args.onProgress?.(
                `${transport} ${device}${result ? ` (result: ${result})` : ''} t=${t} ${op} ${bytes} B: whole call ${totalMs.toFixed(2)} ms (${row.busGBsTotal.toFixed(2)} GB/s bus), transport + gather ${movingMs.toFixed(2)} ms (${row.busGBsTransport.toFixed(2)} GB/s bus, ${(100 * row.ofMemcpy).toFixed(0)}% of memcpy)`,
              );
            }
          }
      } finally {
        await pool.dispose();
      }
    }
  }
  return {
    adapter,
    crossOriginIsolated: globalThis.crossOriginIsolated,
    hardwareConcurrency: navigator.hardwareConcurrency,
    memcpyGBs,
    rows,
  };
}
