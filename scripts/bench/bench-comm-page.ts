// Runs in the bench page (scripts/bench/bench-comm.ts imports it through scripts/device/browser-run.ts).
import type { CollectiveOp } from '../../src/comm/collectives.ts';
import { createCommPool } from '../../src/session/pools.ts';
import type { RankWorkerHandle } from '../../src/ranks/pool.ts';
import type { PoolTransport } from '../../src/ranks/transport.ts';
import { phaseTime, type TraceEvent, type TracePhase } from '../../src/core/trace-event.ts';
import { median } from '../../src/core/stats.ts';
import type { UploadPath } from '../../src/comm/gpu-options.ts';

type BenchOp = Exclude<CollectiveOp, 'barrier'>;

/** One measured configuration: times are medians over iterations of the slowest rank (ms). */
export interface CommBenchRow {
  readonly transport: PoolTransport;
  /** Where the tensors live: host arrays, or GPU buffers (adds read-back and upload). */
  readonly device: 'cpu' | 'gpu';
  /** Each result in new memory, or in one array (host) or tensor (GPU) of the caller's reused call after call. */
  readonly result: HostBenchResult;
  /** GPU tensors: bytes per pipeline part (0: one part), the upload path, and the pause (ms) between read-back copy and map. */
  readonly partBytes?: number;
  readonly upload?: UploadPath;
  readonly mapAfterMs?: number;
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
  /** What each phase could cost here at best (ms): see CommBenchFloor. */
  readonly floor: CommBenchFloor;
  /**
   * The iteration whose whole call (slowest rank) is the median, rank by rank: its phases, ms
   * from the earliest rank's start, and the call's end as a last phase 'end' of zero length: shows
   * which rank waits for which (the per-phase columns take each phase's slowest rank apart).
   */
  readonly timeline: readonly (readonly TracePhase[])[];
}

/**
 * Floors reachable on this machine (ms), from the tiny-buffer mapAsync round trip `rt` (rank 0
 * alone, mapped after the row's pause) and the page's memcpy time `m(b)` for b bytes: read-back rt + m(S) (one copy into the
 * mapped staging); ring m(bus bytes) (each rank reads S·busFactor from its peers' slots); upload
 * rt + m(result bytes); whole call: host arrays the ring's, GPU tensors max(read-back, ring,
 * upload), which a perfect pipeline reaches. `totalAllMs`: the same with the round trip of all t
 * ranks mapping at once (the slowest rank's; a collective waits for it), GPU tensors only.
 */
export interface CommBenchFloor {
  readonly readbackMs: number;
  readonly ringMs: number;
  readonly uploadMs: number;
  readonly totalMs: number;
  readonly totalAllMs: number;
}

/** Everything one bench run measured. */
export interface CommBenchReport {
  readonly adapter: string;
  readonly crossOriginIsolated: boolean;
  readonly hardwareConcurrency: number;
  /** Single-thread `TypedArray.prototype.set` bandwidth (GB/s) per payload size, in this page. */
  readonly memcpyGBs: Readonly<Record<number, number>>;
  /** The round trip of a tiny read-back per degree and pause between copy and map. */
  readonly mapRoundTrips: readonly MapRoundTrip[];
  /**
   * Median round trip (ms) of a 16-byte copy submitted and awaited with onSubmittedWorkDone, all t
   * ranks at once (the slowest rank), per degree: what the layer's flush before a collective adds.
   */
  readonly workDoneAllMs: Readonly<Record<number, number>>;
  readonly rows: readonly CommBenchRow[];
}

/**
 * Median round trip (ms) of a 16-byte copy into a pooled staging buffer mapped `mapAfterMs` after
 * the copy: `oneMs` on rank 0 alone, `allMs` with all t ranks at once after a barrier (the
 * slowest rank's, as a collective waits for it).
 */
export interface MapRoundTrip {
  readonly t: number;
  readonly mapAfterMs: number;
  readonly oneMs: number;
  readonly allMs: number;
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
  /** Each of these result modes is measured (host arrays and GPU tensors). */
  readonly results: readonly HostBenchResult[];
  /** GPU tensors: pipeline part sizes in bytes (0: unparted; page arguments cannot carry Infinity), each measured. */
  readonly partBytes: readonly number[];
  /** GPU tensors: upload paths, each measured. */
  readonly uploads: readonly UploadPath[];
  /** GPU tensors: pauses (ms) between a read-back's copy and its map, each measured. */
  readonly mapAfterMs: readonly number[];
  /** Timed calls per configuration (default: 64 MiB worth, 3 to 20). */
  readonly iters?: number;
  readonly onProgress?: (line: string) => void;
}

/**
 * nccl-tests bus factor: all-reduce 2(t−1)/t, reduce-scatter, all-gather and all-to-all (t−1)/t,
 * broadcast 1 (an all-to-all's bytes are each rank's input, its splits benchSplits' uneven ones).
 */
export function busFactor(op: BenchOp, t: number): number {
  if (op === 'allReduce') return (2 * (t - 1)) / t;
  if (op === 'broadcast') return 1;
  return (t - 1) / t;
}

/**
 * GB/s of dst.set(src) for `bytes`: median of ≥ 5 samples, each as many copies as fill ≥ 2 ms
 * (counted per sample, so a sample never divides by a time below the clock's resolution: a
 * batch size fixed by one slow first copy once made 64 KiB samples read 0 ms, i.e. Infinity).
 */
function memcpyBandwidth(bytes: number): number {
  const src = new Float32Array(bytes / 4).map((_, i) => i);
  const dst = new Float32Array(bytes / 4);
  dst.set(src);
  const perCopy: number[] = [];
  const start = performance.now();
  while (perCopy.length < 5 || (performance.now() - start < 200 && perCopy.length < 100)) {
    const t0 = performance.now();
    let copies = 0;
    let dt = 0;
    while (dt < 2) {
      dst.set(src);
      copies++;
      dt = performance.now() - t0;
    }
    perCopy.push(dt / copies);
  }
  return bytes / median(perCopy) / 1e6;
}

/** Median over iterations of the slowest rank's value of `f`. */
function slowest(events: TraceEvent[], t: number, f: (e: TraceEvent) => number): number {
  const perIter: number[] = [];
  for (let i = 0; i < events.length / t; i++) perIter.push(Math.max(...events.slice(i * t, (i + 1) * t).map(f)));
  return median(perIter);
}

/** The phases of the median iteration's events (`t` per iteration), rank by rank, from its first start (ms). */
function medianTimeline(events: TraceEvent[], t: number): TracePhase[][] {
  const iters = [...Array(events.length / t).keys()].map((i) => events.slice(i * t, (i + 1) * t));
  const span = (it: TraceEvent[]): number => Math.max(...it.map((e) => e.t1 - e.t0));
  const it = [...iters].sort((a, b) => span(a) - span(b))[Math.floor((iters.length - 1) / 2)];
  if (!it) return [];
  const start = Math.min(...it.map((e) => e.t0));
  const rel = (p: TracePhase): TracePhase => ({ name: p.name, t0: p.t0 - start, t1: p.t1 - start });
  return it.map((e) => [
    rel({ name: 'call', t0: e.t0, t1: e.t0 }),
    ...e.phases.map(rel),
    rel({ name: 'end', t0: e.t1, t1: e.t1 }),
  ]);
}

/**
 * Measures each op × size × degree × transport × device, with every phase apart; in the page's rank
 * workers, or in those `createWorker` starts (Node: scripts/device/node-ranks.ts).
 */
export async function runCommBench(
  args: CommBenchArgs,
  createWorker?: (rank: number) => RankWorkerHandle,
): Promise<CommBenchReport> {
  const memcpyGBs: Record<number, number> = {};
  for (const bytes of args.sizes) memcpyGBs[bytes] = memcpyBandwidth(bytes);
  const memcpyMs = (b: number): number => b / (memcpyGBs[b] ?? memcpyBandwidth(b)) / 1e6;
  const mapRoundTrips: MapRoundTrip[] = [];
  const roundTrip = (t: number, mapAfterMs: number): MapRoundTrip | undefined =>
    mapRoundTrips.find((r) => r.t === t && r.mapAfterMs === mapAfterMs);
  // The slowest rank's time per iteration, median over iterations.
  const slowestMedian = (perRank: number[][]): number =>
    median(perRank[0].map((_, i) => Math.max(...perRank.map((times) => times[i]))));
  const workDoneAllMs: Record<number, number> = {};
  const rows: CommBenchRow[] = [];
  let adapter = '';
  for (const transport of args.transports) {
    for (const t of args.degrees) {
      const pool = await createCommPool(t, transport, 60_000, Math.max(...args.sizes), createWorker);
      adapter = pool.adapters[0];
      try {
        if (args.devices.includes('gpu')) {
          for (const mapAfterMs of args.mapAfterMs) {
            const one = await pool.run('mapRoundTrip', { iters: 50, ranks: 'one', mapAfterMs });
            const all = await pool.run('mapRoundTrip', { iters: 50, ranks: 'all', mapAfterMs });
            mapRoundTrips.push({ t, mapAfterMs, oneMs: median(one[0]), allMs: slowestMedian(all) });
          }
          const wd = await pool.run('mapRoundTrip', { iters: 50, ranks: 'all', what: 'work-done' });
          workDoneAllMs[t] = slowestMedian(wd);
        }
        type Mode = {
          device: 'cpu' | 'gpu';
          result: HostBenchResult;
          partBytes?: number;
          upload?: UploadPath;
          mapAfterMs?: number;
        };
        const modes = args.devices.flatMap((device) =>
          args.results.flatMap((result): Mode[] =>
            device === 'cpu'
              ? [{ device, result }]
              : args.partBytes.flatMap((partBytes) =>
                  args.uploads.flatMap((upload) =>
                    args.mapAfterMs.map((mapAfterMs) => ({ device, result, partBytes, upload, mapAfterMs })),
                  ),
                ),
          ),
        );
        for (const { device, result, partBytes, upload, mapAfterMs } of modes)
          for (const op of args.ops) {
            for (const bytes of args.sizes) {
              const iters = args.iters ?? Math.max(3, Math.min(20, Math.round((64 << 20) / bytes)));
              const perRank = await pool.run('benchCollective', {
                op,
                device,
                elems: bytes / 4,
                iters,
                warmup: 1,
                result,
                ...(device === 'gpu' && { gpu: { partBytes: partBytes || Infinity, upload, mapAfterMs } }),
              });
              // Rank r's i-th event is events[i·t + r] after interleaving.
              const events = perRank[0].flatMap((_, i) => perRank.map((evs) => evs[i]));
              const ms = (f: (e: TraceEvent) => number): number => slowest(events, t, f);
              const transportMs = ms((e) => phaseTime(e, 'transport'));
              const gatherMs = ms((e) => phaseTime(e, 'gather'));
              const movingMs = ms((e) => phaseTime(e, 'transport') + phaseTime(e, 'gather'));
              const totalMs = ms((e) => e.t1 - e.t0);
              // A time below the clock's resolution reads as no bandwidth figure (NaN), never Infinity.
              const bus = (time: number): number => (time > 0 ? ((bytes / time) * busFactor(op, t)) / 1e6 : NaN);
              const outBytes = op === 'allGather' ? bytes : op === 'reduceScatter' ? bytes / t : bytes;
              const rts = mapAfterMs === undefined ? undefined : roundTrip(t, mapAfterMs);
              const rt = rts?.oneMs ?? 0;
              const ringMs = memcpyMs(bytes) * busFactor(op, t);
              const gpu = device === 'gpu';
              const readMs = memcpyMs(op === 'allGather' ? bytes / t : bytes);
              const floor = {
                readbackMs: gpu ? rt + readMs : 0,
                ringMs,
                uploadMs: gpu ? rt + memcpyMs(outBytes) : 0,
              };
              const rtAll = rts?.allMs ?? 0;
              const row: CommBenchRow = {
                transport,
                device,
                result,
                ...(gpu && { partBytes, upload, mapAfterMs }),
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
                floor: {
                  ...floor,
                  totalMs: Math.max(floor.readbackMs, floor.ringMs, floor.uploadMs),
                  totalAllMs: gpu ? Math.max(rtAll + readMs, ringMs, rtAll + memcpyMs(outBytes)) : ringMs,
                },
                timeline: medianTimeline(events, t),
              };
              rows.push(row);
              args.onProgress?.(
                `${transport} ${device} (result: ${result}${gpu ? `, part ${partBytes} B, upload ${upload}, map after ${mapAfterMs} ms` : ''}) t=${t} ${op} ${bytes} B: whole call ${totalMs.toFixed(2)} ms (${row.busGBsTotal.toFixed(2)} GB/s bus), transport + gather ${movingMs.toFixed(2)} ms (${row.busGBsTransport.toFixed(2)} GB/s bus, ${(100 * row.ofMemcpy).toFixed(0)}% of memcpy)`,
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
    // Node 20 has no navigator: the caller says how many threads it has.
    hardwareConcurrency: globalThis.navigator?.hardwareConcurrency ?? 0,
    memcpyGBs,
    mapRoundTrips,
    workDoneAllMs,
    rows,
  };
}
