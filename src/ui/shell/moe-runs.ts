// The page's MoE run (experts > 0): the block forward and backward on its own rank workers, the latest settings winning; the timeline, the MoE card and the classroom read this one run.
import { moeWorld } from '../../parallel/moe-layout.ts';
import { moePoolMesh, moeRunErrors, runMoe, type MoeRun, type MoeRunArgs } from '../../session/moe-run.ts';
import { createLayerPool } from '../../session/pools.ts';
import { runLatest, type LatestRuns } from '../../session/run-latest.ts';
import { moeOn, moeRunArgsOf } from '../settings/moe-settings.ts';
import type { Settings } from '../settings/state.ts';

/** Where the MoE run stands: `state` idle, running, done, refused (the args' errors) or failed. */
export interface MoeRunState {
  readonly state: 'idle' | 'running' | 'done' | 'refused' | 'failed';
  /** The args of the shown run (or of the refused or failed request). */
  readonly args?: MoeRunArgs;
  readonly run?: MoeRun;
  readonly error: string;
}

/** What an MoE run computes: its args (settings differing elsewhere share it). */
const moeKey = (a: MoeRunArgs): string => JSON.stringify(a);

/**
 * The MoE runs of the page: a request without experts or without WebGPU runs nothing; one the
 * config or the layout refuses is shown refused (its messages sit at the controls too); one that
 * runs gets a pool laid out for its layout (moePoolMesh), disposed afterwards.
 */
export class MoeRuns {
  private state: MoeRunState = { state: 'idle', error: '' };
  private shownKey = '';
  private readonly queue: LatestRuns<MoeRunArgs>;

  constructor(
    private readonly onState: (s: MoeRunState) => void,
    private readonly hasGpu: boolean,
  ) {
    this.queue = runLatest<MoeRunArgs>({
      key: moeKey,
      run: (a, signal) => this.runOnce(a, signal),
      onError: (e, a) => this.set({ state: 'failed', args: a, error: e instanceof Error ? e.message : String(e) }),
    });
  }

  get current(): MoeRunState {
    return this.state;
  }

  /** Runs the MoE block of `s` unless it has none, nothing can run here, or that run is shown already. */
  request(s: Settings): void {
    if (!this.hasGpu || !moeOn(s)) return;
    const a = moeRunArgsOf(s);
    const key = moeKey(a);
    if (key === this.shownKey && this.state.state !== 'failed') return;
    const errors = moeRunErrors(a);
    if (errors.length) {
      this.shownKey = key;
      this.set({ state: 'refused', args: a, run: undefined, error: errors.join(' ') });
      return;
    }
    this.queue.request(a);
  }

  private set(patch: Partial<MoeRunState>): void {
    this.state = { ...this.state, ...patch };
    this.onState(this.state);
  }

  private async runOnce(a: MoeRunArgs, signal: AbortSignal): Promise<void> {
    this.set({ state: 'running', error: '' });
    const pool = await createLayerPool(moeWorld(a.layout), 'auto', 60_000, moePoolMesh(a.layout));
    try {
      signal.throwIfAborted();
      const run = await runMoe(pool, a);
      if (signal.aborted) return;
      this.shownKey = moeKey(a);
      this.set({ state: 'done', args: a, run, error: '' });
    } finally {
      await pool.dispose();
    }
  }
}
