// Text of the timeline: collective names, block labels and tooltips (pure, no DOM); the units are core/format.ts's.
import type { CollectiveOp } from '../../comm/collectives.ts';
import type { PlannedGemm } from '../../parallel/plan-types.ts';
import type { ScheduledEvent } from '../../schedule/schedule.ts';
import { transferSlowdown, type TransferEvent } from '../../schedule/transfer-slowdown.ts';
import { formatBytes, formatFlops, formatMs, gflopsPerSecond, trim } from '../../core/format.ts';
import { expertRange, expertRows, expertRowsWords, peerSentWords, peerTableWords } from './moe-format.ts';

const collectiveNames: Record<CollectiveOp, string> = {
  allReduce: 'all-reduce',
  reduceScatter: 'reduce-scatter',
  allGather: 'all-gather',
  broadcast: 'broadcast',
  barrier: 'barrier',
  ringExchange: 'ring exchange',
  allToAll: 'all-to-all',
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
 * An all-to-all that recorded its bytes per peer leads with them ("all-to-all →1 2 KiB →2 1 KiB"),
 * an expert GEMM with its rows per local expert ("experts 2–3 rows 12·7").
 */
export function labelCandidates(
  e: Pick<ScheduledEvent, 'op' | 'gemm' | 'inShapes' | 'collective' | 'rank' | 'comm' | 'experts'>,
): string[][] {
  const c = e.collective;
  if (c) {
    const name = collectiveName(c.op);
    const peers = e.comm?.peers ? [[`${name} ${peerSentWords(e.comm.peers, e.rank)}`]] : [];
    return [...peers, [`${name} ×${c.groupSize} ${formatBytes(c.payloadBytes)}`], [`${name} ×${c.groupSize}`], [name]];
  }
  const x = e.experts;
  const rows = x ? [[`${e.op} ${expertRange(x)} ${expertRowsWords(x)}`], [e.op, expertRowsWords(x)]] : [];
  const shape = localShape(e);
  const parts = e.op.split('.');
  const short = parts.length > 2 ? [[parts.slice(1).join('.')]] : [];
  return [...rows, [`${e.op} ${shape}`], [e.op, shape], [e.op], ...short];
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
    if (e.comm?.peers) lines.push(...peerTableWords(e.comm.peers, e.rank));
    lines.push(`exposed ${formatMs(e.exposedMs)}${e.overlapped ? ' · overlapped with wgrad' : ''}`);
    return lines;
  }
  lines.push(`${e.kernel ?? e.kind} ${e.shapeLabel}`);
  if (e.experts)
    lines.push(
      `${expertRange(e.experts)}: ${expertRows(e.experts)} token rows (${e.experts.tokens.join(', ')} per expert)`,
    );
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
