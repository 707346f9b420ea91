// What the MoE view draws of one run on the ranks (pure, no DOM): the tokens-per-expert-per-rank
// grid, who owns which expert, the all-to-all bytes between ranks, and the straggler (from the run,
// or from any timeline's expert GEMM events) in words.
import type { ExpertGemmInfo, TraceEvent } from '../../core/trace-event.ts';
import { expertRange, expertRows } from '../shared/moe-format.ts';
import type { MoeRun } from '../../session/moe-run.ts';

/** The heat map: tokens[r][e] = picks of rank r's tokens routed to expert e (after capacity); owners[e] the ranks holding expert e. */
export interface MoeHeat {
  readonly tokens: readonly (readonly number[])[];
  readonly owners: readonly (readonly number[])[];
  /** The largest cell (the colour scale's top; 1 when every cell is 0). */
  readonly max: number;
}

/** The heat map of a run. */
export function moeHeat(run: MoeRun): MoeHeat {
  const E = run.expertLoad.length;
  const owners = Array.from({ length: E }, (_, e) =>
    run.ranks.filter((r) => e >= r.firstExpert && e < r.firstExpert + r.expertRows.length).map((r) => r.rank),
  );
  const tokens = run.ranks.map((r) => r.tokensPerExpert);
  return { tokens, owners, max: Math.max(1, ...tokens.flat()) };
}

/** The straggler in words: the rank whose experts processed the most rows, against the mean over ranks. */
export function moeStragglerText(run: MoeRun): string {
  const rows = run.ranks.map((r) => r.expertRows.reduce((a, n) => a + n, 0));
  const mean = rows.reduce((a, n) => a + n, 0) / Math.max(1, rows.length);
  const r = run.ranks[run.straggler.rank]!;
  const last = r.firstExpert + r.expertRows.length - 1;
  const experts = last > r.firstExpert ? `experts ${r.firstExpert}–${last}` : `expert ${r.firstExpert}`;
  const ratio = mean > 0 ? ` (${(run.straggler.rows / mean).toFixed(2)}× the mean of ${mean.toFixed(1)})` : '';
  return `rank ${run.straggler.rank}: its ${experts} processed ${run.straggler.rows} token rows${ratio}; the others wait for it in the combine all-to-all`;
}

/** Bytes rank i sent to rank j in the all-to-alls named `tensor` (bytes[i][j], global ranks; i = j: rows kept locally). */
export function allToAllBytes(trace: readonly TraceEvent[], tensor: string, ranks: number): number[][] {
  const out = Array.from({ length: ranks }, () => new Array<number>(ranks).fill(0));
  for (const e of trace) {
    const p = e.comm?.peers;
    if (!p || e.comm?.tensor !== tensor) continue;
    p.ranks.forEach((to, j) => (out[e.rank]![to]! += p.sentBytes[j]!));
  }
  return out;
}

/** The rank whose expert GEMMs processed the most token rows, read from a timeline's events. */
export interface ExpertStraggler {
  readonly rank: number;
  readonly rows: number;
  /** Mean rows over the ranks that ran expert GEMMs. */
  readonly meanRows: number;
  /** Its GEMM's experts. */
  readonly experts: ExpertGemmInfo;
}

/**
 * The expert straggler of `events` (null when none ran expert GEMMs): per rank, the rows of its
 * expert GEMM events (forward and backward run the same rows, so the largest is the rank's), the
 * rank with the most (the lowest on ties). The others wait for it in the combine all-to-all.
 */
export function expertStraggler(events: readonly Pick<TraceEvent, 'rank' | 'experts'>[]): ExpertStraggler | null {
  const best = new Map<number, ExpertGemmInfo>();
  for (const e of events) {
    if (!e.experts) continue;
    const had = best.get(e.rank);
    if (!had || expertRows(e.experts) > expertRows(had)) best.set(e.rank, e.experts);
  }
  if (best.size === 0) return null;
  const ranks = [...best.entries()].sort((a, b) => a[0] - b[0]);
  const [rank, experts] = ranks.reduce((m, x) => (expertRows(x[1]) > expertRows(m[1]) ? x : m));
  const meanRows = ranks.reduce((a, x) => a + expertRows(x[1]), 0) / ranks.length;
  return { rank, rows: expertRows(experts), meanRows, experts };
}

/** The expert straggler in words: "Expert straggler: rank 1 — its experts 2–3 processed 19 token rows (1.19× the mean of 16.0): …". */
export function expertStragglerSentence(s: ExpertStraggler): string {
  const ratio = s.meanRows > 0 ? ` (${(s.rows / s.meanRows).toFixed(2)}× the mean of ${s.meanRows.toFixed(1)})` : '';
  return `Expert straggler: rank ${s.rank} — its ${expertRange(s.experts)} processed ${s.rows} token rows${ratio}: the most work before the combine all-to-all, which no rank of its group can finish before it.`;
}
