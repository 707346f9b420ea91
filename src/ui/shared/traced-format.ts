// Text of the ranks' recorded events in the timeline (pure, no DOM): labels and tooltips of a traced window.
import type { CollectiveOp } from '../../comm/collectives.ts';
import type { TracedEvent } from '../../schedule/traced-timeline.ts';
import { formatBytes, formatFlops, formatMs } from '../../core/format.ts';
import { expertRange, expertRows, expertRowsWords, peerSentWords, peerTableWords } from './moe-format.ts';
import { collectiveName } from './timeline-format.ts';

/** A recorded collective's NCCL-style name: "allToAll" → "all-to-all" (the trace's op is the collective's). */
const commName = (e: TracedEvent): string => collectiveName(e.op as CollectiveOp);

/**
 * Label candidates, most informative first: an all-to-all "moe.dispatch →1 2 KiB →2 1 KiB", then
 * its tensor and all it sent, then its tensor; another collective "all-reduce ×4 96 B"; an expert
 * GEMM "experts 2–3 rows 12·7", then shorter down to its rows in all ("19"); any other kernel its op.
 */
export function tracedLabels(e: TracedEvent): string[][] {
  const c = e.comm;
  if (c) {
    const what = c.tensor ?? commName(e);
    if (c.peers) {
      const sent = c.peers.sentBytes.reduce((a, b) => a + b, 0);
      return [
        [`${what} ${peerSentWords(c.peers, e.rank)}`],
        [what, peerSentWords(c.peers, e.rank)],
        [`${what} ${formatBytes(sent)}`],
        [what],
      ];
    }
    return [[`${what} ${commName(e)} ×${c.groupSize} ${formatBytes(e.bytes)}`], [`${what} ${commName(e)}`], [what]];
  }
  if (e.experts) {
    const x = e.experts;
    const rows = expertRowsWords(x);
    return [
      [`${expertRange(x)} ${rows}`],
      [expertRange(x), rows],
      [rows],
      [`${expertRows(x)} rows`],
      [`${expertRows(x)}`],
    ];
  }
  return [[e.op]];
}

/** Tooltip lines: what moved (per peer for an all-to-all) or which experts ran how many rows, duration, exposed part. */
export function tracedTooltip(e: TracedEvent): string[] {
  const ms = e.t1 - e.t0;
  const c = e.comm;
  const lines = [`${c?.tensor ?? e.op} — rank ${e.rank}`];
  if (c) {
    lines.push(
      `${commName(e)} over ${c.groupSize} ranks · ${c.transport} · ${c.device === 'gpu' ? 'GPU' : 'host'} tensor`,
    );
    if (c.peers) lines.push(...peerTableWords(c.peers, e.rank));
    else lines.push(`payload ${formatBytes(e.bytes)} · this rank sent ${formatBytes(c.sentBytes)}`);
    lines.push(`duration ${formatMs(ms)} (start ${formatMs(e.t0)}; measured on the ranks)`);
    lines.push(`exposed ${formatMs(e.exposedMs)} (not covered by this rank's expert GEMMs)`);
    return lines;
  }
  if (e.experts)
    lines.push(
      `grouped GEMM of ${expertRange(e.experts)}: ${expertRows(e.experts)} token rows (${e.experts.tokens.join(', ')} per expert)`,
    );
  if (e.flops) lines.push(formatFlops(e.flops));
  lines.push(`duration ${formatMs(ms)} (start ${formatMs(e.t0)}; measured on the ranks)`);
  return lines;
}
