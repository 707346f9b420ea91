// Text of the timeline: units, collective names, block labels and tooltips (pure, no DOM).
import type { CollectiveOp } from '../../comm/collectives.ts';
import type { PlannedGemm } from '../../parallel/plan-types.ts';
import type { ScheduledEvent } from '../../schedule/schedule.ts';
import { transferSlowdown, type TransferEvent } from '../../schedule/transfer-slowdown.ts';
import { formatBytes, trim } from '../../core/format-bytes.ts';

export { formatBytes };

/** Milliseconds in the unit that reads best: 0.0374 → "37.4 µs", 7.746 → "7.75 ms", 1234 → "1.23 s". */
export function formatMs(ms: number): string {
  const a = Math.abs(ms);
  if (a === 0) return '0 ms';
  if (a < 1e-3) return `${trim(ms * 1e6)} ns`;
  if (a < 1) return `${trim(ms * 1e3)} µs`;
  if (a < 1000) return `${trim(ms)} ms`;
  return `${trim(ms / 1000)} s`;
}

/**
 * The tick format of a time axis over `domain` (ms): every tick in the unit formatMs gives the
 * domain's largest |end| ("0 µs … 250 µs", never "0 ms" beside "50 µs"), three significant digits
 * — or, given the axis's `ticks`, as many decimals as their step needs where three digits would
 * print two ticks alike (zoomed to 0.1 µs inside a 400 ms step: "123.4501 ms", "123.4502 ms").
 */
export function msTickFormat(domain: readonly number[], ticks: readonly number[] = []): (ms: number) => string {
  const a = Math.max(0, ...domain.map(Math.abs));
  const [per, unit] = a < 1e-3 ? [1e6, 'ns'] : a < 1 ? [1e3, 'µs'] : a < 1000 ? [1, 'ms'] : [1e-3, 's'];
  const short = ticks.map((t) => trim(t * per));
  if (new Set(short).size === short.length) return (ms) => `${trim(ms * per)} ${unit}`;
  const step = Math.min(
    ...ticks
      .slice(1)
      .map((t, i) => Math.abs(t - ticks[i]) * per)
      .filter((d) => d > 0),
  );
  const decimals = Math.min(12, Math.max(0, Math.ceil(-Math.log10(step) - 1e-9)));
  return (ms) => `${(ms * per).toFixed(decimals)} ${unit}`;
}

/** A change of time with its sign: +1.2 ms, −37.1 ms, 0. */
export const formatSignedMs = (ms: number): string =>
  ms > 0 ? `+${formatMs(ms)}` : ms < 0 ? `−${formatMs(-ms)}` : '0';

/** FLOPs with an SI prefix: 37748736 → "37.7 MFLOP". */
export function formatFlops(flops: number): string {
  const prefixes = ['', 'k', 'M', 'G', 'T', 'P'];
  let v = flops;
  let p = 0;
  while (Math.abs(v) >= 1000 && p < prefixes.length - 1) {
    v /= 1000;
    p++;
  }
  return `${trim(v)} ${prefixes[p]}FLOP`;
}

/** GFLOP/s of `flops` done in `ms`; 0 when the time is 0. */
export function gflopsPerSecond(flops: number, ms: number): number {
  return ms > 0 ? flops / ms / 1e6 : 0;
}

const collectiveNames: Record<CollectiveOp, string> = {
  allReduce: 'all-reduce',
  reduceScatter: 'reduce-scatter',
  allGather: 'all-gather',
  broadcast: 'broadcast',
  barrier: 'barrier',
  ringExchange: 'ring exchange',
};

/** NCCL-style name of a collective: allReduce → "all-reduce". */
export function collectiveName(op: CollectiveOp): string {
  return collectiveNames[op] ?? op;
}

/** A shape without spaces, for tight labels: [32, 768] → "[32,768]". */
export function compactShape(shape: readonly number[]): string {
  return `[${shape.join(',')}]`;
}

/**
 * The local problem of a compute event: a GEMM as "[M,K]·[K,N]" (prefixed "batch×" when batched),
 * any other kernel as its input shapes joined by "·".
 */
export function localShape(e: {
  readonly gemm?: Omit<PlannedGemm, 'site'>;
  readonly inShapes: ScheduledEvent['inShapes'];
}): string {
  if (e.gemm) {
    const { M, N, K, batch } = e.gemm;
    return `${batch > 1 ? `${batch}×` : ''}[${M},${K}]·[${K},${N}]`;
  }
  return e.inShapes.map(compactShape).join('·');
}

/**
 * Label candidates of a block, each a list of lines, most informative first (the view draws the
 * first that fits): compute "qkv.q [32,768]·[768,192]", then the name over the shape, then the
 * name, then the name without its first part ("down.dgrad"); a collective "all-reduce ×4 96 KiB", then "all-reduce ×4", then "all-reduce".
 */
export function labelCandidates(e: Pick<ScheduledEvent, 'op' | 'gemm' | 'inShapes' | 'collective'>): string[][] {
  const c = e.collective;
  if (c) {
    const name = collectiveName(c.op);
    return [[`${name} ×${c.groupSize} ${formatBytes(c.payloadBytes)}`], [`${name} ×${c.groupSize}`], [name]];
  }
  const shape = localShape(e);
  const parts = e.op.split('.');
  const short = parts.length > 2 ? [[parts.slice(1).join('.')]] : [];
  return [[`${e.op} ${shape}`], [e.op, shape], [e.op], ...short];
}

/** Tooltip lines of an event: name, kind, shape, M/N/K, FLOPs, GFLOP/s, bytes, duration, wait, exposed. */
export function tooltipLines(e: ScheduledEvent): string[] {
  const ms = e.t1 - e.t0;
  const lines = [`${e.op} — rank ${e.rank}, ${e.phase}`];
  if (e.collective) {
    const c = e.collective;
    lines.push(`${collectiveName(c.op)} over ${c.groupSize} ranks — ${c.mapping}`);
    lines.push(`payload ${formatBytes(c.payloadBytes)} · ring sends ${formatBytes(c.ringBytesSent)} per rank`);
    lines.push(`duration ${formatMs(ms)} (wait ${formatMs(e.waitMs)}, transfer ${formatMs(ms - e.waitMs)})`);
    lines.push(`exposed ${formatMs(e.exposedMs)}${e.overlapped ? ' · overlapped with wgrad' : ''}`);
    return lines;
  }
  lines.push(`${e.kernel ?? e.kind} ${e.shapeLabel}`);
  if (e.gemm) {
    const g = e.gemm;
    lines.push(`M ${g.M} · N ${g.N} · K ${g.K}${g.batch > 1 ? ` · batch ${g.batch}` : ''}`);
  }
  const flops = e.flops ?? 0;
  lines.push(`${formatFlops(flops)} · ${trim(gflopsPerSecond(flops, ms))} GFLOP/s`);
  lines.push(`duration ${formatMs(ms)} (start ${formatMs(e.t0)})`);
  const x = 'transfer' in e ? (e as TransferEvent).transfer : undefined;
  if (x)
    lines.push(
      `under a ring transfer: ${formatMs(x.overlappedMs)}; alone ${formatMs(x.aloneMs)} (×${transferSlowdown(x).toFixed(2)}, same kernel timed both ways in this run)`,
    );
  return lines;
}
