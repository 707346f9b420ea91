// The page's MoE run (experts > 0): the transformer layer with the MoE block as its MLP, forward and backward on its own rank workers (the M036 demonstration: the block alone), the latest settings winning; the timeline, the MoE card and the classroom read this one run.
import type { LayerConfig } from '../../parallel/config.ts';
import { moeWorld } from '../../parallel/moe-layout.ts';
import { moeLayerRunErrors, runMoeLayer, type MoeLayerRun } from '../../session/moe-layer-run.ts';
import { moePoolMesh, moeRunErrors, runMoe, type MoeRun, type MoeRunArgs } from '../../session/moe-run.ts';
import { createLayerPool } from '../../session/pools.ts';
import { runLatest, type LatestRuns } from '../../session/run-latest.ts';
import { moeOn, moeRunArgsOf } from '../settings/moe-settings.ts';
import { configOf, type Settings } from '../settings/state.ts';

/** Where the MoE run stands: `state` idle, running, done, refused (the args' errors) or failed. */
export interface MoeRunState {
  readonly state: 'idle' | 'running' | 'done' | 'refused' | 'failed';
  /** The block's args of the shown run (or of the refused or failed request). */
  readonly args?: MoeRunArgs;
  /** The layer with the MoE block (MoeLayerRun), or under the M036 demonstration the block alone (MoeRun). */
  readonly run?: MoeRun | MoeLayerRun;
  /** The WebGPU adapter the shown run's rank workers ran on. */
  readonly adapter?: string;
  readonly error: string;
}

/** What the page asks the ranks for: the block's args and, unless it is the M036 demonstration, the layer around it. */
export interface MoeRequest {
  readonly args: MoeRunArgs;
  /** The attention half's config (vocab 0, the layout's t and SP); null: the block alone (M036). */
  readonly layer: LayerConfig | null;
}

/** The request of `s`: the layer with its MoE block, or the block alone for the M036 demonstration (the layer refuses TP without SP). */
export function moeRequestOf(s: Settings): MoeRequest {
  const args = moeRunArgsOf(s);
  const l = args.layout;
  return { args, layer: args.demonstration ? null : { ...configOf(s), vocab: 0, tp: l.tp, sp: l.sp } };
}

/** What an MoE run computes (settings differing elsewhere share it). */
const moeKey = (r: MoeRequest): string => JSON.stringify(r);

/** Every reason `r` cannot run, one message each. */
const requestErrors = (r: MoeRequest): string[] =>
  r.layer ? moeLayerRunErrors({ layer: r.layer, config: r.args.config, layout: r.args.layout }) : moeRunErrors(r.args);

/**
 * The MoE runs of the page: a request without experts or without WebGPU runs nothing; one the
 * config or the layout refuses is shown refused (its messages sit at the controls too); one that
 * runs gets a pool laid out for its layout (moePoolMesh), disposed afterwards.
 */
export class MoeRuns {
  private state: MoeRunState = { state: 'idle', error: '' };
  private shownKey = '';
  private readonly queue: LatestRuns<MoeRequest>;

  constructor(
    private readonly onState: (s: MoeRunState) => void,
    private readonly hasGpu: boolean,
  ) {
    this.queue = runLatest<MoeRequest>({
      key: moeKey,
      run: (r, signal) => this.runOnce(r, signal),
      onError: (e, r) =>
        this.set({ state: 'failed', args: r.args, run: undefined, error: e instanceof Error ? e.message : String(e) }),
    });
  }

  get current(): MoeRunState {
    return this.state;
  }

  /** Runs the MoE layer of `s` unless it has no experts, nothing can run here, or that run is shown already. */
  request(s: Settings): void {
    if (!this.hasGpu || !moeOn(s)) return;
    const r = moeRequestOf(s);
    const key = moeKey(r);
    if (key === this.shownKey && this.state.state !== 'failed') return;
    const errors = requestErrors(r);
    if (errors.length) {
      this.shownKey = key;
      this.set({ state: 'refused', args: r.args, run: undefined, error: errors.join(' ') });
      return;
    }
    this.queue.request(r);
  }

  private set(patch: Partial<MoeRunState>): void {
    this.state = { ...this.state, ...patch };
    this.onState(this.state);
  }

  private async runOnce(r: MoeRequest, signal: AbortSignal): Promise<void> {
    this.set({ state: 'running', error: '' });
    const l = r.args.layout;
    const pool = await createLayerPool(moeWorld(l), 'auto', 60_000, moePoolMesh(l));
    try {
      signal.throwIfAborted();
      const run = r.layer
        ? await runMoeLayer(pool, { layer: r.layer, config: r.args.config, layout: l })
        : await runMoe(pool, r.args);
      if (signal.aborted) return;
      this.shownKey = moeKey(r);
      this.set({ state: 'done', args: r.args, run, adapter: pool.adapters[0], error: '' });
    } finally {
      await pool.dispose();
    }
  }
}
