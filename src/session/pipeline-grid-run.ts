import {
  pipelineGrid,
  pipelineGridModel,
  pipelineGridTraining,
  type PipelineGridPoint,
  type PipelineGridSizes,
} from '../parallel/pipeline-grid.ts';
import { runPipeline } from './pipeline-run.ts';
import { createLayerPool } from './pools.ts';

/** One grid point's verdict against one device (parallel/pipeline-oracle.ts, parallel/pipeline-dp.ts). */
export interface PipelineGridRow {
  readonly point: PipelineGridPoint;
  readonly ranks: number;
  readonly ok: boolean;
  /** Tensors compared: each replica's losses, every gradient, every weight after the second Adam step. */
  readonly tensors: number;
  /** The tensor with the largest max|rank − one device| ÷ tolerance, that error, its tolerance and the ratio. */
  readonly worst: string;
  readonly worstAbs: number;
  readonly worstTol: number;
  readonly worstRatio: number;
  /** The measured (second) step, ms. */
  readonly stepMs: number;
  readonly failures: readonly string[];
}

export interface PipelineGridReport {
  readonly adapter: string;
  readonly sizes: PipelineGridSizes;
  readonly rows: readonly PipelineGridRow[];
  /** Wall time of the whole grid (pools started, every point run), s. */
  readonly seconds: number;
}

const layoutKey = (pt: PipelineGridPoint): string => `${pt.tp}/${pt.pp}/${pt.dp}`;

/**
 * The whole grid (pipelineGrid) on rank workers, one pool per t × p × d mesh reused by its points:
 * every point's oracle verdict. What `npm run sweep -- --pipeline-grid` prints.
 */
export async function runPipelineGrid(
  a: PipelineGridSizes & { readonly onProgress?: (line: string) => void },
): Promise<PipelineGridReport> {
  const t0 = performance.now();
  const sizes: PipelineGridSizes = { layers: a.layers, m: a.m, seed: a.seed };
  const say = a.onProgress ?? (() => {});
  const byMesh = new Map<string, PipelineGridPoint[]>();
  for (const pt of pipelineGrid) byMesh.set(layoutKey(pt), [...(byMesh.get(layoutKey(pt)) ?? []), pt]);
  const rows: PipelineGridRow[] = [];
  let adapter = 'unknown adapter';
  for (const points of byMesh.values()) {
    const { tp, pp, dp } = points[0]!;
    const N = tp * pp * dp;
    say(`t ${tp} × p ${pp} × d ${dp}: ${points.length} points on ${N} rank workers…`);
    const pool = await createLayerPool(N, 'auto', 60_000, { degrees: { tp, pp, dp } });
    adapter = pool.adapters[0] ?? adapter;
    try {
      for (const pt of points) {
        const run = await runPipeline(pool, {
          model: pipelineGridModel(pt, sizes),
          training: pipelineGridTraining,
          dp: pt.sync,
        });
        const w = run.oracle.worst;
        rows.push({
          point: pt,
          ranks: N,
          ok: run.oracle.pass,
          tensors: run.oracle.entries.length,
          worst: w.tensor,
          worstAbs: w.maxAbs,
          worstTol: w.tol,
          worstRatio: w.maxAbs / w.tol,
          stepMs: run.measured.spanMs,
          failures: run.oracle.entries
            .filter((e) => !e.pass)
            .map((e) => `${e.tensor}: ${e.maxAbs.toExponential(2)} > ${e.tol.toExponential(2)}`),
        });
        say(
          `  ${pt.schedule} ${pt.sync}: ${run.oracle.pass ? 'pass' : 'FAIL'}, worst ${(w.maxAbs / w.tol).toFixed(4)} of the tolerance`,
        );
      }
    } finally {
      await pool.dispose();
    }
  }
  return { adapter, sizes, rows, seconds: (performance.now() - t0) / 1000 };
}
