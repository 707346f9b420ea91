// What the page runs for its settings: check once, draw what the plan gives at once, then let the rank workers fill in.
import { budgetRun, memoryBudget, type MemoryBudget } from '../../accounting/budget.ts';
import { presets, type LayerConfig } from '../../parallel/config.ts';
import { planValidated } from '../../parallel/plan.ts';
import { legalTpDegrees, validateConfig } from '../../parallel/validate.ts';
import {
  PlaygroundRunner,
  projectedResult,
  type PlaygroundResult,
  type Projector,
} from '../../session/playground-runner.ts';
import { runLatest, type LatestRuns } from '../../session/run-latest.ts';
import { afterNextPaint } from '../shared/next-paint.ts';
import { slowdownRankIssue } from '../../core/rank-slowdown.ts';
import { formatMs } from '../../core/format.ts';
import { placeIssues, type FieldIssue } from '../settings/field-issues.ts';
import { moeIssues, moeOn } from '../settings/moe-settings.ts';
import { machineChoice } from '../settings/machine-choice.ts';
import { runsMesh } from '../settings/mesh-settings.ts';
import { configOf, hashFromSettings, runKey, sizeKeys, type Settings } from '../settings/state.ts';

/** What the browser offers: WebGPU with an adapter, none at all, or navigator.gpu without an adapter. */
export type GpuState = 'ok' | 'none' | 'no-adapter';

/** Where the rank workers stand for the result on screen. */
export type RanksState =
  /** They ran it: oracle, output and (off a real cluster) measured times are in. */
  | 'done'
  /** They are running it: the result on screen comes from the plan and the projection alone. */
  | 'running'
  /** The settings changed before they finished: the result on screen has no oracle. */
  | 'stopped'
  /** No WebGPU: nothing runs, the timeline is modeled. */
  | 'none'
  /** The view on screen (classroom, GEMM) runs its own programs on the workers; the layer runs when the timeline is shown again. */
  | 'deferred'
  /** Experts are set: the workers run the layer with its MoE block (moe-runs.ts), not the dense layer. */
  | 'moe';

/**
 * Whether the page's dense layer runs on the rank workers: in the timeline view without experts.
 * With experts the layer with its MoE block runs instead (moe-runs.ts); the other views borrow
 * the workers for their own programs.
 */
const layerOnRanks = (s: Settings): boolean => s.view === 'timeline' && !moeOn(s);

/** Everything the page shows about its runs. */
export interface PageRunState {
  readonly gpu: GpuState;
  /** Issues that stop the run, each by its control; notes stay by theirs without stopping it. */
  readonly issues: readonly FieldIssue[];
  readonly notes: readonly FieldIssue[];
  readonly result?: PlaygroundResult;
  /** Which machine the shown result describes (the caption's first words). */
  readonly shownMachine: string;
  /** runKey of the shown result. */
  readonly shownKey: string;
  /** The hash of the last run the rank workers finished (tp-app mirrors it as `data-shown`). */
  readonly shownHash: string;
  readonly ranks: RanksState;
  readonly runError: string;
  /** A run is in flight (the status line spins). */
  readonly busy: boolean;
  readonly progress: string;
}

/** One request: the settings and the control the user changed (its issues sit by it). */
interface PageRequest {
  readonly settings: Settings;
  readonly changed: keyof Settings | undefined;
}

/**
 * The page's runs: one PlaygroundRunner (its pool of rank workers), one runLatest queue (changes
 * coalesce, a stale run is aborted), the memory budget (refined once the adapter is probed). Each
 * run validates its configuration and checks its budget once, plans once, shows on a real cluster
 * the projected timeline of the plan at once, then the rank workers' result when it comes.
 */
export class PageRuns {
  /** The runner: the classroom and GEMM views borrow its warm pool. */
  readonly runner: PlaygroundRunner;
  private state: PageRunState;
  private budget: MemoryBudget = memoryBudget((navigator as { deviceMemory?: number }).deviceMemory);
  private readonly probed: Promise<void>;
  private isProbed = false;
  private readonly queue: LatestRuns<PageRequest>;

  constructor(
    private readonly onState: (s: PageRunState) => void,
    project: Projector = projectedResult,
  ) {
    // Warm-ups between runs report progress too; only a run's lines replace the status.
    this.runner = new PlaygroundRunner((line) => {
      if (this.state.busy) this.set({ progress: line });
    }, project);
    this.state = {
      gpu: PlaygroundRunner.hasWebGpu() ? 'ok' : 'none',
      issues: [],
      notes: [],
      shownMachine: '',
      shownKey: '',
      shownHash: '',
      ranks: 'none',
      runError: '',
      busy: false,
      progress: '',
    };
    this.queue = runLatest<PageRequest>({
      // A switch to a view that borrows the workers aborts the layer run it would otherwise queue behind.
      key: (r) => `${runKey(r.settings)}\u0000${layerOnRanks(r.settings)}`,
      run: (r, signal) => this.runOnce(r, signal),
      onError: (e) => this.set({ runError: e instanceof Error ? e.message : String(e), progress: 'run failed' }),
    });
    this.probed = this.probeAdapter().finally(() => {
      this.isProbed = true;
    });
  }

  /** The state now. */
  get current(): PageRunState {
    return this.state;
  }

  /** Runs `settings` (coalesced with other changes; a run of other settings in flight is aborted). */
  request(settings: Settings, changed?: keyof Settings): void {
    this.queue.request({ settings, changed });
  }

  /** Resolves once no layer run is in flight or pending (the mesh run waits for it: they would share the cores). */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  /** Terminates the rank workers. */
  dispose(): Promise<void> {
    return this.runner.dispose();
  }

  private set(patch: Partial<PageRunState>): void {
    this.state = { ...this.state, ...patch };
    this.onState(this.state);
  }

  private async probeAdapter(): Promise<void> {
    this.runner.budget = this.budget;
    if (this.state.gpu !== 'ok') return;
    const adapter = await navigator.gpu.requestAdapter().catch(() => null);
    if (!adapter) {
      this.runner.modelOnly = true;
      this.set({ gpu: 'no-adapter' });
      return;
    }
    const deviceMemory = (navigator as { deviceMemory?: number }).deviceMemory;
    this.runner.budget = this.budget = memoryBudget(deviceMemory, adapter.limits, "this adapter's");
  }

  /** The configuration's rules and the machine: the issues that stop a run before anything is planned. */
  private rules(s: Settings, changed: keyof Settings | undefined) {
    const config = configOf(s);
    const v = validateConfig(config);
    const machine = machineChoice(s);
    const moe = moeIssues(s);
    const slow = (['slow', 'slowlink'] as const).flatMap((field) => {
      const message = slowdownRankIssue(field, s[field], s.tp);
      return message ? [{ field, message }] : [];
    });
    return {
      config,
      machine,
      issues: [...placeIssues([...v.errors, ...moe.issues], changed), ...machine.issues, ...slow],
      // notes stay by their own control: moving them would shift the controls under the pointer
      notes: placeIssues([...v.notes, ...moe.notes]),
    };
  }

  /**
   * Memory of a valid configuration against the budget, before any worker allocates. A budget issue
   * sits by the size the link or the user set (#b=100000 by b), else by the one that saves most.
   */
  private budgetIssues(s: Settings, config: LayerConfig, changed: keyof Settings | undefined): FieldIssue[] {
    const set = (f: string): boolean => sizeKeys.some((k) => k === f && s[k] !== presets[s.preset][k]);
    return placeIssues(
      budgetRun(config, this.budget).errors.map((e) => ({ ...e, field: e.fields.find(set) ?? e.field })),
      changed,
    );
  }

  /**
   * One run: the rules and the memory budget (once), the plan (once, not validated again), on a
   * real cluster the projected timeline at once (it needs neither the adapter nor a worker), then
   * the rank workers. Only a run that started before the adapter probe finished is budgeted a second
   * time, against the adapter's buffer limits.
   */
  private async runOnce({ settings: s, changed }: PageRequest, signal: AbortSignal): Promise<void> {
    const { config, machine, issues, notes } = this.rules(s, changed);
    // Memory before anything is planned, against the budget known now (the page's, or the adapter's once probed).
    let budget = this.budget;
    if (!issues.length) {
      let over = this.budgetIssues(s, config, changed);
      if (over.length && !this.isProbed) {
        // Said against the adapter's own limits when it has them (its maxStorageBufferBindingSize, not WebGPU's minimum).
        await this.probed;
        budget = this.budget;
        over = this.budgetIssues(s, config, changed);
      }
      issues.push(...over);
    }
    this.set({ issues, notes });
    if (issues.length) return; // keep the last good view
    const key = runKey(s);
    const ranks = this.state.ranks;
    if (
      key === this.state.shownKey &&
      this.state.result &&
      ranks !== 'running' &&
      ranks !== 'deferred' &&
      ranks !== 'moe'
    )
      return;
    if (key === this.state.shownKey && this.state.result && !layerOnRanks(s)) {
      // the same result in another view: say why the workers do not run it in this one
      if (ranks === 'moe' || ranks === 'deferred') this.set({ ranks: s.view === 'timeline' ? 'moe' : 'deferred' });
      return;
    }
    const started = performance.now();
    this.set({ busy: true, progress: `running t = ${s.tp}${s.sp ? ' with SP' : ''}…` });
    try {
      const req = {
        config,
        comm: machine.comm,
        overlap: s.overlap,
        slow: s.slow,
        slowlink: s.slowlink,
        plan: (await planValidated(config)).plan,
        ...(machine.projection && { projection: machine.projection }),
      };
      // A real cluster's timeline, the shapes and the memory come from the plan alone: drawn before any
      // rank worker starts, and handed to the run, which then computes neither again.
      const projected = req.projection && this.runner.project({ ...req, projection: req.projection }, req.plan);
      if (projected) {
        this.set({
          result: projected,
          shownMachine: machine.label,
          shownKey: key,
          ranks: this.state.gpu === 'ok' ? 'running' : 'none',
          runError: '',
        });
        await afterNextPaint(); // the workers' start-up must not hold the first frame
      }
      if (!layerOnRanks(s) && this.state.gpu === 'ok') {
        const moe = s.view === 'timeline';
        this.set({
          ranks: moe ? 'moe' : 'deferred',
          progress: moe
            ? `t = ${s.tp} planned; the rank workers run the layer with its MoE block`
            : `t = ${s.tp} planned; the layer runs on the rank workers when the timeline is shown`,
        });
        return;
      }
      await this.probed;
      signal.throwIfAborted();
      // The first run of the page was checked before the probe: against the adapter's buffer limits now.
      const over = this.budget === budget ? [] : this.budgetIssues(s, config, changed);
      if (over.length) {
        this.set({ issues: over, ...(this.state.ranks === 'running' && { ranks: 'stopped' }) });
        return;
      }
      const result = await this.runner.run({ ...req, projected }, signal);
      this.set({
        result,
        shownMachine: machine.label,
        shownKey: key,
        shownHash: hashFromSettings(s),
        ranks: result.oracle ? 'done' : 'none',
        runError: '',
        progress: `ran t = ${s.tp} in ${formatMs(performance.now() - started)}`,
      });
      // A mesh run follows (mesh-runs.ts): warming other degrees now would share the cores with it.
      if (!runsMesh(s)) this.prewarm(s);
    } catch (e) {
      const stopped = this.state.ranks === 'running' ? { ranks: 'stopped' as const } : {};
      if (signal.aborted) this.set({ ...stopped, progress: `stopped t = ${s.tp}: the settings changed` });
      else this.set({ ...stopped, runError: e instanceof Error ? e.message : String(e), progress: 'run failed' });
    } finally {
      this.set({ busy: false });
    }
  }

  /** Warms the legal degrees next to t (within 1…8) so the next TP change is a re-run. */
  private prewarm(s: Settings): void {
    const legal = legalTpDegrees(s, s.sp, 8);
    const i = legal.indexOf(s.tp);
    const near = [legal[i + 1], legal[i - 1]].filter((t): t is number => t !== undefined);
    this.runner.prewarm(configOf(s), near);
  }
}
