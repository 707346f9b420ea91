import { moeGrid, moeGridArgs, type MoeGridPoint, type MoeGridSizes } from '../parallel/moe-grid.ts';
import { moeWorld, type MoeLayout } from '../parallel/moe-layout.ts';
import { runMoe, withMoePool } from './moe-run.ts';

/** One grid point's verdict against one device (src/parallel/moe-oracle.ts). */
export interface MoeGridRow {
  readonly point: MoeGridPoint;
  readonly ranks: number;
  readonly ok: boolean;
  readonly sameRouting: boolean;
  /** The oracle's routing margin and the bound on the ranks' logit error it must exceed. */
  readonly margin: number;
  readonly logitError: number;
  /** The check with the largest |rank − oracle| ÷ tolerance, and that ratio. */
  readonly worst: string;
  readonly worstRatio: number;
  readonly dropped: number;
  readonly failures: readonly string[];
}

export interface MoeGridReport {
  readonly adapter: string;
  readonly sizes: MoeGridSizes;
  readonly rows: readonly MoeGridRow[];
}

const layoutKey = (l: MoeLayout): string => `${l.tp}/${l.etp}/${l.ep}/${l.dispatcher}/${l.sp}`;

/**
 * The whole grid (moeGrid) on rank workers, one pool per layout reused by the points on it: every
 * point's oracle verdict. What `npm run sweep -- --moe-grid` prints.
 */
export async function runMoeGrid(
  a: MoeGridSizes & { readonly onProgress?: (line: string) => void },
): Promise<MoeGridReport> {
  const sizes: MoeGridSizes = { h: a.h, tokens: a.tokens, ffn: a.ffn, seed: a.seed };
  const say = a.onProgress ?? (() => {});
  const byLayout = new Map<string, { layout: MoeLayout; points: MoeGridPoint[] }>();
  for (const pt of moeGrid) {
    const layout = moeGridArgs(pt, sizes).layout;
    const entry = byLayout.get(layoutKey(layout)) ?? { layout, points: [] };
    entry.points.push(pt);
    byLayout.set(layoutKey(layout), entry);
  }
  const rows: MoeGridRow[] = [];
  let adapter = 'unknown adapter';
  for (const { layout, points } of byLayout.values()) {
    const N = moeWorld(layout);
    say(
      `tp ${layout.tp} SP, etp ${layout.etp}, ep ${layout.ep}, ${layout.dispatcher}: ${points.length} points on ${N} rank workers…`,
    );
    await withMoePool(layout, async (pool) => {
      adapter = pool.adapters[0] ?? adapter;
      for (const pt of points) {
        const run = await runMoe(pool, moeGridArgs(pt, sizes));
        const worst = run.oracle.checks.reduce((w, x) => (x.worst / x.tolerance > w.worst / w.tolerance ? x : w));
        rows.push({
          point: pt,
          ranks: N,
          ok: run.oracle.ok,
          sameRouting: run.oracle.sameRouting,
          margin: run.oracle.margin,
          logitError: run.oracle.logitError,
          worst: worst.what,
          worstRatio: worst.worst / worst.tolerance,
          dropped: run.dropped,
          failures: run.oracle.failures,
        });
      }
    });
  }
  return { adapter, sizes, rows };
}
