/**
 * The page's mesh run: the settings' layout (mesh/mesh-check.ts MeshLayout) as a pipeline model,
 * run on a pool of t·p·d rank workers kept while the degrees stay (session/pipeline-run.ts runs it,
 * its d replicas synced over their DP groups, and checks it against one device).
 */
import type { MeshLayout } from '../mesh/mesh-check.ts';
import { checkMeshLayout } from '../mesh/mesh-check.ts';
import type { LayerConfig } from '../parallel/config.ts';
import type { DpSyncMode } from '../parallel/dp-options.ts';
import type { PipelineModel } from '../parallel/pipeline-model.ts';
import type { PipelineTraining } from '../parallel/pipeline-oracle.ts';
import type { RankPool } from '../ranks/pool.ts';
import type { LayerWorkerPrograms } from './layer-run.ts';
import { runPipeline, type PipelineRunResult } from './pipeline-run.ts';
import { createLayerPool } from './pools.ts';

/**
 * Two steps, Adam after each, so the oracle checks the weights after two updates and the second
 * step is the measured one (the first compiles the pipelines). Megatron's β1 and β2; lr 1e-2 and
 * ε 1e-2 as tests/gpu/ranks/pipeline.test.ts takes them (they keep the update Lipschitz in the
 * gradient, so the oracle's weight tolerance holds).
 */
export const pageTraining: PipelineTraining = { steps: 2, adam: { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-2 } };

/** The pipeline model the page runs: the settings' layer (its t) as every block, L blocks over p × v, m micro-batches. */
export function meshModel(config: LayerConfig, l: MeshLayout): PipelineModel {
  return { layer: config, layers: l.layers, p: l.pp, v: l.vpp, m: l.m, schedule: l.schedule };
}

/** A worker's start-up and first pipeline compile on SwiftShader take seconds; a collective that waits this long has a dead peer. */
const meshTimeoutMs = 120_000;

/** Runs the page's meshes on one pool of rank workers, re-made when the degrees change. */
export class MeshRunner {
  private pool: RankPool<LayerWorkerPrograms> | undefined;
  private degrees = '';

  constructor(private readonly say: (line: string) => void = () => {}) {}

  /**
   * Runs `layout` (checked first: a layout the rules refuse throws their messages, before any worker
   * starts); with d > 1 the replicas sync by all-reduce, or with `distopt` by the distributed optimizer.
   */
  async run(
    config: LayerConfig,
    layout: MeshLayout,
    distopt: boolean,
    signal?: AbortSignal,
  ): Promise<PipelineRunResult> {
    const issues = checkMeshLayout(layout);
    if (issues.length) throw new Error(issues.map((i) => i.message).join(' '));
    const degrees = { tp: layout.tp, pp: layout.pp, dp: layout.dp };
    const key = JSON.stringify(degrees);
    if (this.pool?.failure || this.degrees !== key) await this.dispose();
    const n = layout.tp * layout.pp * layout.dp;
    if (!this.pool) {
      this.say(`starting ${n} rank workers for t ${layout.tp} × p ${layout.pp} × d ${layout.dp}…`);
      this.pool = await createLayerPool(n, 'auto', meshTimeoutMs, { degrees });
      this.degrees = key;
    }
    signal?.throwIfAborted();
    this.say(`running ${layout.schedule} on ${n} rank workers…`);
    const dp: DpSyncMode | undefined =
      layout.dp > 1 || distopt ? (distopt ? 'distributed-optimizer' : 'all-reduce') : undefined;
    return runPipeline(this.pool, { model: meshModel(config, layout), training: pageTraining, ...(dp && { dp }) });
  }

  /** Terminates the workers; the next run starts a fresh pool. */
  async dispose(): Promise<void> {
    const p = this.pool;
    this.pool = undefined;
    this.degrees = '';
    await p?.dispose();
  }
}
