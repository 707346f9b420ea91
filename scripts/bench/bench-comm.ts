// npm run bench:comm [-- --json] [-- --save FILE] [-- --quick] [-- --node] [-- --t 2,4,8] [-- --sizes 64K,16M] [-- --transport sab-ring] [-- --results new,out] [-- --part 4M,all] [-- --upload mapped,write-buffer] [-- --map-after 0,0.2] [-- --iters N] [-- --timeline]
// Collective time and nccl-tests bus bandwidth across rank workers in headless Chromium (or, with
// --node, rank worker threads in Node through Dawn), each phase apart, next to the single-thread
// memcpy bandwidth.
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import type { CommBenchArgs, CommBenchReport, CommBenchRow } from './bench-comm-page.ts';
import { dawnAdapterOrRerun } from '../device/dawn-node.ts';
import { checkOutputPaths } from '../cli/output-path.ts';
import { defaultGpuCollectiveOptions } from '../../src/comm/gpu-options.ts';

const { values } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    save: { type: 'string' },
    quick: { type: 'boolean', default: false },
    node: { type: 'boolean', default: false },
    t: { type: 'string' },
    sizes: { type: 'string' },
    transport: { type: 'string' },
    ops: { type: 'string' },
    device: { type: 'string' },
    results: { type: 'string' },
    part: { type: 'string' },
    upload: { type: 'string' },
    'map-after': { type: 'string' },
    iters: { type: 'string' },
    timeline: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(
    'usage: npm run bench:comm -- [--json] [--save FILE] [--quick] [--node] [--t 2,4,8] [--sizes 64K,1M,64M] [--transport sab-ring,message-port] [--ops allReduce,...] [--device cpu,gpu] [--results new,out] [--part 4M,all] [--upload mapped,write-buffer] [--map-after 0,0.2] [--iters N] [--timeline]',
  );
  process.exit(0);
}

const parseSize = (s: string): number => {
  const m = /^(\d+)([KMG]?)$/i.exec(s.trim());
  if (!m) throw new Error(`bench:comm: cannot read size "${s}" (use e.g. 64K, 16M).`);
  return Number(m[1]) * { '': 1, K: 1 << 10, M: 1 << 20, G: 1 << 30 }[m[2].toUpperCase() as '' | 'K' | 'M' | 'G'];
};
const list = (s: string | undefined, fallback: string[]): string[] =>
  s ? s.split(',').map((x) => x.trim()) : fallback;
/** The values of --`flag`, each one of `allowed`, or an error naming the ones it takes. */
const oneOf = <T extends string>(flag: string, allowed: readonly T[], fallback: readonly T[], why = ''): T[] =>
  list(values[flag as keyof typeof values] as string | undefined, [...fallback]).map((v) => {
    if (!(allowed as readonly string[]).includes(v))
      throw new Error(`bench:comm: --${flag} takes ${allowed.join(', ')}${why}; got "${v}".`);
    return v as T;
  });
const underNode = ' under --node';
const allSizes = ['64K', '256K', '1M', '4M', '16M', '64M'];
const transports = ['sab-ring', 'message-port'] as const;
const args: CommBenchArgs = {
  degrees: list(values.t, values.quick ? ['4'] : ['2', '4', '8']).map(Number),
  sizes: list(values.sizes, values.quick ? ['64K', '16M'] : allSizes).map(parseSize),
  transports: oneOf(
    'transport',
    values.node ? ['sab-ring'] : transports,
    values.node ? ['sab-ring'] : transports,
    values.node ? `${underNode} (its rank threads share memory; the MessagePort ring runs in the page)` : '',
  ),
  ops: oneOf(
    'ops',
    ['allReduce', 'reduceScatter', 'allGather', 'broadcast', 'ringExchange', 'allToAll'],
    ['allReduce', 'reduceScatter', 'allGather', 'broadcast'],
  ),
  devices: oneOf('device', ['cpu', 'gpu'], ['cpu', 'gpu']),
  results: oneOf('results', ['new', 'out'], ['new', 'out']),
  partBytes: list(values.part, [String(defaultGpuCollectiveOptions.partBytes)]).map((p) =>
    p === 'all' ? 0 : parseSize(p),
  ),
  uploads: oneOf(
    'upload',
    values.node ? ['mapped'] : ['mapped', 'write-buffer'],
    [values.node ? 'mapped' : defaultGpuCollectiveOptions.upload],
    values.node ? `${underNode} (Dawn for Node crashes on a writeBuffer from shared memory, the ring's slots)` : '',
  ),
  mapAfterMs: list(values['map-after'], [String(defaultGpuCollectiveOptions.mapAfterMs)]).map(Number),
  ...(values.iters !== undefined && { iters: Number(values.iters) }),
};
if (args.iters !== undefined && !(Number.isInteger(args.iters) && args.iters >= 1))
  throw new Error(`bench:comm: --iters takes a positive integer, got "${values.iters}".`);
for (const [i, ms] of args.mapAfterMs.entries())
  if (!(ms >= 0 && ms <= 100))
    throw new Error(
      `bench:comm: --map-after takes pauses in ms from 0 to 100, got "${list(values['map-after'], [])[i]}".`,
    );
for (const p of args.partBytes)
  if (p % 4 !== 0) throw new Error(`bench:comm: --part sizes must be multiples of 4 bytes, got ${p}.`);
for (const t of args.degrees)
  if (!Number.isInteger(t) || t < 2 || t > 8) throw new Error(`bench:comm: --t takes degrees from 2 to 8, got ${t}.`);
for (const b of args.sizes)
  if (b % (4 * 8) !== 0) throw new Error(`bench:comm: sizes must be multiples of 32 bytes, got ${b}.`);

checkOutputPaths('bench:comm', { '--save': values.save });

const onProgress = (line: string): void => void process.stderr.write(`${line}\n`);
let report: CommBenchReport;
let host: string;
if (values.node) {
  // Dawn's adapter is checked here first (and this process run again with SwiftShader's Vulkan
  // driver where the system has none); each rank's thread then opens its own.
  const { note } = await dawnAdapterOrRerun();
  const { runCommBench } = await import('./bench-comm-page.ts');
  const { nodeRankWorker } = await import('../device/node-ranks.ts');
  report = {
    ...(await runCommBench({ ...args, onProgress }, nodeRankWorker)),
    hardwareConcurrency: availableParallelism(),
  };
  host = `rank worker threads in Node ${process.version} through Dawn (the webgpu package; ${note}); ${report.hardwareConcurrency} hardware threads`;
} else {
  // Imported here: --node runs without Playwright (scripts/device/device-pack.ts does not carry it).
  const { runInBrowser } = await import('../device/browser-run.ts');
  report = await runInBrowser<CommBenchReport>(
    '/scripts/bench/bench-comm-page.ts',
    'runCommBench',
    { ...args },
    {
      onProgress,
      timeoutMs: 45 * 60_000,
    },
  );
  host = `rank workers in headless Chromium; page cross-origin isolated: ${report.crossOriginIsolated}; ${report.hardwareConcurrency} hardware threads`;
}

const fmtBytes = (b: number): string => (b >= 1 << 20 ? `${b / (1 << 20)} MiB` : `${b / 1024} KiB`);
const targetRows = report.rows.filter(
  (r) => r.transport === 'sab-ring' && r.device === 'cpu' && r.op === 'allReduce' && r.t === 4 && r.bytes === 16 << 20,
);
const target = targetRows.find((r) => r.result === 'out') ?? targetRows[0];

const json = JSON.stringify(
  { ...report, host, target: target && { ofMemcpy: target.ofMemcpy, met: target.ofMemcpy >= 0.5 } },
  null,
  2,
);
if (values.save) writeFileSync(values.save, `${json}\n`);
if (values.json) console.log(json);
else {
  console.log(`Collectives on ${report.adapter}, across ${host}.`);
  console.log(
    "Times: median over iterations of the slowest rank; device cpu = host arrays, gpu = GPU buffers (read back → move → upload). Result 'new' = new memory per call (host array or GPU tensor), 'out' = written into one array or tensor of the caller's, reused. GPU: part = bytes per pipeline part (all = unparted), upload = mapped (pooled mapped buffers + copy) or write-buffer (queue.writeBuffer from the ring), map@ = ms between submitting the read-back's copies and mapping them. Phases: sync (arrival + fingerprint check), stage (input into the ring's memory), transport (ring steps), gather (sab-ring: result read from the slots) or unstage (message-port: result copied out); pipelined GPU calls sum each phase over their parts. bus GB/s = S/time · 2(t−1)/t (all-reduce), (t−1)/t (reduce-scatter, all-gather, all-to-all: S = each rank's input, split unevenly: rank q sends rank r the share (1 + (q + r) mod t)/(t(t+1)/2)), 1 (broadcast), of transport + gather and (total) of the whole call. floor = what the whole call could cost here: host the ring's memcpy time, GPU max(read-back, ring, upload floors), a read-back or upload floor being the tiny mapAsync round trip (rank 0 alone, mapped after the row's map@) + one memcpy of its bytes; ×floor = total ÷ floor, rb× and up× the same for read-back and upload, ring× = (transport + gather or unstage) ÷ the ring's floor; floor‖ = the floor with the round trip of all t ranks mapping at once (the slowest), ×fl‖ = total ÷ floor‖.",
  );
  console.log(
    `memcpy (TypedArray.prototype.set, one thread): ${Object.entries(report.memcpyGBs)
      .map(([b, g]) => `${fmtBytes(Number(b))} ${g.toFixed(2)} GB/s`)
      .join(', ')}`,
  );
  if (report.mapRoundTrips.length)
    console.log(
      `mapAsync round trip (16 B copy + map, pooled buffer; median of 50): ${report.mapRoundTrips.map((r) => `t = ${r.t}, map@ ${r.mapAfterMs} ms: rank 0 alone ${r.oneMs.toFixed(2)} ms, all ${r.t} ranks at once ${r.allMs.toFixed(2)} ms (slowest rank)`).join('; ')}; onSubmittedWorkDone round trip (16 B copy submitted and awaited, the layer's flush before a collective), all ranks at once: ${Object.entries(
        report.workDoneAllMs,
      )
        .map(([t, ms]) => `t = ${t}: ${ms.toFixed(2)} ms`)
        .join('; ')}`,
    );
  const pad = (s: string | number, n: number): string => String(s).padStart(n);
  // NaN (a time below the clock's resolution, or no figure) prints as "-".
  const f = (x: number, d = 2): string => (Number.isFinite(x) ? x.toFixed(d) : '-');
  const part = (r: CommBenchRow): string =>
    r.partBytes === undefined ? '-' : r.partBytes === 0 ? 'all' : fmtBytes(r.partBytes);
  const head = `${'transport'.padEnd(13)}${'dev'.padEnd(4)}${'result'.padEnd(7)}${pad('part', 8)} ${'upload'.padEnd(13)}${pad('map@', 5)} ${'op'.padEnd(14)}${pad('t', 2)}${pad('size', 9)}${pad('total ms', 10)}${pad('readback', 9)}${pad('sync', 8)}${pad('stage', 8)}${pad('transport', 10)}${pad('gather', 8)}${pad('unstage', 8)}${pad('upload', 8)}${pad('bus GB/s', 9)}${pad('(total)', 8)}${pad('memcpy', 8)}${pad('ratio', 7)}${pad('floor', 8)}${pad('×floor', 8)}${pad('rb×', 7)}${pad('ring×', 7)}${pad('up×', 7)}${pad('floor‖', 8)}${pad('×fl‖', 7)}`;
  console.log(head);
  const ratio = (a: number, b: number): string => (b > 0 ? f(a / b, 1) : '-');
  for (const r of report.rows as CommBenchRow[]) {
    const gpu = r.device === 'gpu';
    console.log(
      `${r.transport.padEnd(13)}${r.device.padEnd(4)}${r.result.padEnd(7)}${pad(part(r), 8)} ${(r.upload ?? '-').padEnd(13)}${pad(r.mapAfterMs ?? '-', 5)} ${r.op.padEnd(14)}${pad(r.t, 2)}${pad(fmtBytes(r.bytes), 9)}${pad(f(r.totalMs), 10)}${pad(f(r.readbackMs), 9)}${pad(f(r.syncMs), 8)}${pad(f(r.stageMs), 8)}${pad(f(r.transportMs), 10)}${pad(f(r.gatherMs), 8)}${pad(f(r.unstageMs), 8)}${pad(f(r.uploadMs), 8)}${pad(f(r.busGBsTransport), 9)}${pad(f(r.busGBsTotal), 8)}${pad(f(report.memcpyGBs[r.bytes]), 8)}${pad(Number.isFinite(r.ofMemcpy) ? `${(100 * r.ofMemcpy).toFixed(0)}%` : '-', 7)}${pad(f(r.floor.totalMs, 3), 8)}${pad(ratio(r.totalMs, r.floor.totalMs), 8)}${pad(gpu ? ratio(r.readbackMs, r.floor.readbackMs) : '-', 7)}${pad(ratio(r.transportMs + r.gatherMs + r.unstageMs, r.floor.ringMs), 7)}${pad(gpu ? ratio(r.uploadMs, r.floor.uploadMs) : '-', 7)}${pad(f(r.floor.totalAllMs, 3), 8)}${pad(ratio(r.totalMs, r.floor.totalAllMs), 7)}`,
    );
  }
  if (values.timeline) {
    console.log(
      "Timelines (--timeline): the median iteration's phases per rank, ms from the first rank's start (adjacent phases of one name merged; 'end' = the call returned).",
    );
    for (const r of report.rows as CommBenchRow[]) {
      console.log(
        `${r.transport} ${r.device} ${r.result} ${part(r)} ${r.upload ?? '-'}${r.mapAfterMs === undefined ? '' : ` map@${r.mapAfterMs}`} ${r.op} t=${r.t} ${fmtBytes(r.bytes)}:`,
      );
      r.timeline.forEach((phases, rank) => {
        const merged: { name: string; t0: number; t1: number }[] = [];
        for (const p of phases) {
          const last = merged.at(-1);
          if (last && last.name === p.name) last.t1 = p.t1;
          else merged.push({ ...p });
        }
        console.log(
          `  rank ${rank}: ${merged.map((p) => (p.t1 > p.t0 ? `${p.name} ${f(p.t0)}–${f(p.t1)}` : `${p.name} ${f(p.t0)}`)).join(', ')}`,
        );
      });
    }
  }
  if (target) {
    console.log(
      `Target: sab-ring all-reduce 16 MiB at t = 4 (host arrays): whole call ${targetRows.map((r) => `${r.totalMs.toFixed(1)} ms = ${r.busGBsTotal.toFixed(2)} GB/s bus${r.result ? ` (result: ${r.result})` : ''}`).join(', ')}; transport + gather = ${(100 * target.ofMemcpy).toFixed(0)}% of memcpy bandwidth (goal ≥ 50%): ${target.ofMemcpy >= 0.5 ? 'met' : 'NOT met'}.`,
    );
  }
}
