// The page's mesh run (p > 1 or d > 1): its own queue and rank workers beside the TP layer's, the latest settings winning.
import { MeshRunner } from '../../session/mesh-runner.ts';
import type { PipelineRunResult } from '../../session/pipeline-run.ts';
import { runLatest, type LatestRuns } from '../../session/run-latest.ts';
import { meshIssues, meshLayoutOf, runsMesh } from '../settings/mesh-settings.ts';
import { configOf, hashFromSettings, type Settings } from '../settings/state.ts';

/** Where the mesh run stands. */
export interface MeshRunState {
  readonly busy: boolean;
  readonly progress: string;
  /** The last step the ranks ran, and the hash of its settings. */
  readonly result?: PipelineRunResult;
  readonly shownHash: string;
  readonly error: string;
}

/** What a mesh run computes: the layer's configuration and the layout (settings differing elsewhere share it). */
export const meshKey = (s: Settings): string => JSON.stringify([configOf(s), meshLayoutOf(s), s.distopt]);

/**
 * The mesh runs of the page: a request whose settings run no mesh, break a mesh rule (shown at
 * their controls), or arrive without WebGPU runs nothing; one that does runs on a MeshRunner
 * (session/mesh-runner.ts), a newer request replacing a pending one.
 */
export class MeshRuns {
  private state: MeshRunState = { busy: false, progress: '', shownHash: '', error: '' };
  /** meshKey of the shown result. */
  private shownKey = '';
  private readonly runner: MeshRunner;
  private readonly queue: LatestRuns<Settings>;

  /**
   * @param before resolves when the cores are free for the mesh (the page's TP layer run done:
   *   measured side by side, each would stretch the other's passes and the bubble with them).
   */
  constructor(
    private readonly onState: (s: MeshRunState) => void,
    private readonly hasGpu: boolean,
    private readonly before: () => Promise<void> = () => Promise.resolve(),
  ) {
    this.runner = new MeshRunner((line) => this.set({ progress: line }));
    this.queue = runLatest<Settings>({
      key: meshKey,
      run: (s, signal) => this.runOnce(s, signal),
      onError: (e) => this.set({ error: e instanceof Error ? e.message : String(e), progress: 'mesh run failed' }),
    });
  }

  get current(): MeshRunState {
    return this.state;
  }

  /** Runs the mesh of `s` if it has one that its rules allow. */
  request(s: Settings): void {
    if (!this.hasGpu || !runsMesh(s) || meshIssues(s).length) return;
    if (this.state.result && meshKey(s) === this.shownKey) return;
    this.queue.request(s);
  }

  dispose(): Promise<void> {
    return this.runner.dispose();
  }

  private set(patch: Partial<MeshRunState>): void {
    this.state = { ...this.state, ...patch };
    this.onState(this.state);
  }

  private async runOnce(s: Settings, signal: AbortSignal): Promise<void> {
    this.set({ busy: true, error: '', progress: 'waiting for the TP layer run to finish…' });
    try {
      await this.before();
      signal.throwIfAborted();
      const result = await this.runner.run(configOf(s), meshLayoutOf(s), s.distopt, signal);
      if (signal.aborted) return;
      this.shownKey = meshKey(s);
      this.set({ result, shownHash: hashFromSettings(s), progress: '' });
    } finally {
      this.set({ busy: false });
    }
  }
}
