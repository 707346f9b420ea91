// Words for an MoE block's events in the timeline (pure, no DOM): an all-to-all's bytes per peer and an expert GEMM's token rows.
import type { ExpertGemmInfo, PeerBytes } from '../../core/trace-event.ts';
import { formatBytes } from '../../core/format.ts';

/** "→1 2 KiB →2 512 B" : what `rank` sent each other rank of its all-to-all (its own rows, kept locally, left out). */
export function peerSentWords(p: PeerBytes, rank: number): string {
  return p.ranks
    .map((r, j) => (r === rank ? '' : `→${r} ${formatBytes(p.sentBytes[j]!)}`))
    .filter(Boolean)
    .join(' ');
}

/** Every peer with sent and received bytes, the own rank marked: "→0 1 KiB / ←0 2 KiB (kept locally)". */
export function peerTableWords(p: PeerBytes, rank: number): string[] {
  return p.ranks.map(
    (r, j) =>
      `rank ${r}: sent ${formatBytes(p.sentBytes[j]!)}, received ${formatBytes(p.receivedBytes[j]!)}${r === rank ? ' (own rows, kept locally)' : ''}`,
  );
}

/** "experts 2–3" or "expert 2": the global experts a GEMM event ran. */
export function expertRange(x: ExpertGemmInfo): string {
  const last = x.firstExpert + x.tokens.length - 1;
  return last > x.firstExpert ? `experts ${x.firstExpert}–${last}` : `expert ${x.firstExpert}`;
}

/** Token rows of the GEMM, all local experts together. */
export const expertRows = (x: ExpertGemmInfo): number => x.tokens.reduce((a, n) => a + n, 0);

/** "rows 12·7": each local expert's token rows, in expert order. */
export const expertRowsWords = (x: ExpertGemmInfo): string => `rows ${x.tokens.join('·')}`;
