// What the MoE view draws of one run on the ranks (pure, no DOM): the tokens-per-expert-per-rank
// grid, who owns which expert, the all-to-all bytes between ranks, each rank's lanes of events, and
// the straggler in words.
import type { TraceEvent } from '../../core/trace-event.ts';
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

/** One drawn slice of a rank's lane: [t0, t1] ms from the run's first event, its label and its words on hover. */
export interface MoeSlice {
  readonly rank: number;
  readonly stream: TraceEvent['stream'];
  readonly op: string;
  readonly t0: number;
  readonly t1: number;
  /** Short text inside the slice: token rows per local expert, or bytes sent per peer. */
  readonly label: string;
  readonly title: string;
}

const kib = (b: number): string => (b < 1024 ? `${b} B` : `${(b / 1024).toFixed(1)} KiB`);

/** Every event of the run as a slice on its rank's lane, labelled with expert rows or bytes per peer. */
export function moeSlices(trace: readonly TraceEvent[]): MoeSlice[] {
  const origin = Math.min(...trace.map((e) => e.t0));
  return trace.map((e) => {
    const peers = e.comm?.peers;
    const name = e.comm?.tensor ?? e.op;
    let label = name;
    let title = `rank ${e.rank} ${name}: ${(e.t1 - e.t0).toFixed(2)} ms`;
    if (e.experts) {
      label = `${name} rows ${e.experts.tokens.join('·')}`;
      title += `; experts ${e.experts.firstExpert}…${e.experts.firstExpert + e.experts.tokens.length - 1} processed ${e.experts.tokens.join(', ')} token rows`;
    } else if (peers) {
      const sent = peers.ranks.map((r, j) => `→${r} ${kib(peers.sentBytes[j]!)}`);
      label = `${name} ${sent.join(' ')}`;
      title += `; sent ${sent.join(', ')} (own rank: rows kept locally)`;
    }
    return { rank: e.rank, stream: e.stream, op: e.op, t0: e.t0 - origin, t1: e.t1 - origin, label, title };
  });
}
