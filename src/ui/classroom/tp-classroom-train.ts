// <tp-classroom-train>: "train K steps" — the classroom layer trained at t and at TP = 1 on the rank workers, with both loss curves.
import { LitElement, css, html, nothing, type TemplateResult } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import { quoted } from '../../core/quote.ts';
import { configFromPreset } from '../../parallel/config.ts';
import { oracleTolerance } from '../../parallel/oracle.ts';
import { trainClassroom, type TrainPoint } from '../../session/classroom-train-run.ts';
import type { PoolLender } from '../../session/layer-run.ts';
import { createLayerPool } from '../../session/pools.ts';
import { LatestWins } from '../../session/latest-wins.ts';
import { panelStyles } from '../shared/page-style.ts';
import './tp-train-chart.ts';

/** Sequences per step: 4 of the classroom's s = 8 characters, 32 predictions a step. */
const BATCH = 4;

/** A whole number in [lo, hi] from a field, or the message that says what to change. */
export function parseSteps(text: string, lo = 1, hi = 500): number | string {
  const k = Number(text);
  return Number.isInteger(k) && k >= lo && k <= hi
    ? k
    : `steps must be a whole number from ${lo} to ${hi}, got ${quoted(text)}.`;
}

/**
 * `<tp-classroom-train tp="2">`: K real Adam steps of the classroom layer (vocabulary 32, the
 * built-in text) on t rank workers and, from the same seed, at TP = 1 on rank 0; draws both loss
 * curves and the spread of the ranks' replicated norm gains (grows with SP + skipnorm).
 * Cancellable; progress per step. The host carries `data-state` (idle, running, done, cancelled,
 * error) and `data-steps-done`; `points` holds the run's figures.
 */
@customElement('tp-classroom-train')
export class TpClassroomTrain extends LitElement {
  static override styles = [
    panelStyles,
    css`
      :host {
        font-size: inherit;
      }
      .controls {
        display: flex;
        flex-wrap: wrap;
        gap: 10px 22px;
        align-items: center;
        margin: 6px 0 10px;
      }
      input[type='number'] {
        width: 4.5em;
        font-size: inherit;
      }
      input[type='checkbox'] {
        width: 1.1em;
        height: 1.1em;
      }
      button {
        font-size: inherit;
        padding: 4px 14px;
        cursor: pointer;
      }
      .summary {
        font-size: 1em;
        margin: 6px 0;
      }
      .error {
        color: #c00;
      }
    `,
  ];

  @property({ type: Number }) tp = 2;
  @property({ attribute: false }) pools?: PoolLender;
  /** Steps per run (the field). */
  @property({ type: Number }) steps = 20;
  /** Adam's learning rate. */
  @property({ type: Number }) lr = 0.01;
  @property({ type: Boolean }) sp = false;
  /** `LayerConfig.skipSpNormGradAllReduce`, labelled `skipnorm` (the playground's hash key). */
  @property({ type: Boolean }) skipSpNormGradAllReduce = false;
  /** The last run's points, one per step done. */
  @state() points: readonly TrainPoint[] = [];
  @state() private runState: 'idle' | 'running' | 'done' | 'cancelled' | 'error' = 'idle';
  @state() private message = '';
  private readonly runs = new LatestWins();

  override disconnectedCallback(): void {
    this.runs.cancel(new Error('the classroom was closed'));
    super.disconnectedCallback();
  }

  /** Runs the demo with the current fields; resolves when it has ended, been cancelled or failed. */
  async train(): Promise<void> {
    if (this.runState === 'running') return;
    const config = configFromPreset('classroom', {
      tp: this.tp,
      b: BATCH,
      sp: this.sp && this.tp > 1,
      skipSpNormGradAllReduce: this.sp && this.skipSpNormGradAllReduce && this.tp > 1,
    });
    this.points = [];
    this.runState = 'running';
    this.message = `starting ${this.tp} rank worker${this.tp > 1 ? 's' : ''}…`;
    await this.runs.run({
      work: async (req) => {
        const args = {
          config,
          steps: this.steps,
          lr: this.lr,
          signal: req.signal,
          onStep: (p: TrainPoint) => {
            if (!req.current) return;
            this.points = [...this.points, p];
            this.message = `step ${p.step} of ${this.steps}: loss ${p.loss.toFixed(4)} at t = ${this.tp}, ${p.lossRef.toFixed(4)} at TP = 1`;
          },
        };
        if (this.pools) return this.pools.withPool(this.tp, (lent) => trainClassroom(lent, args));
        const pool = await createLayerPool(this.tp);
        try {
          return await trainClassroom(pool, args);
        } finally {
          await pool.dispose();
        }
      },
      done: () => {
        this.runState = 'done';
        this.message = '';
      },
      failed: (e, req) => {
        this.runState = req.signal.aborted ? 'cancelled' : 'error';
        this.message = req.signal.aborted
          ? `cancelled after ${this.points.length} of ${this.steps} steps.`
          : `training failed: ${e instanceof Error ? e.message : String(e)}`;
      },
    });
  }

  /** Stops the run before its next step. */
  cancel(): void {
    this.runs.cancel(new Error('cancelled'));
  }

  private summary(): TemplateResult | typeof nothing {
    const p = this.points;
    if (p.length === 0) return nothing;
    const diff = Math.max(...p.map((q) => Math.abs(q.loss - q.lossRef)));
    const tol = oracleTolerance(configFromPreset('classroom', { b: BATCH }), Math.max(...p.map((q) => q.lossRef)));
    const drift = p[p.length - 1].spread;
    return html`<p class="summary" data-max-diff=${String(diff)}>
      Loss ${p[0].loss.toFixed(3)} → ${p[p.length - 1].loss.toFixed(3)} over ${p.length} steps. TP = ${this.tp} vs TP =
      1: max |Δloss| = ${diff.toExponential(1)}
      ${
        diff <= tol
          ? html`≤ ${tol.toExponential(1)}, float32 rounding: the curves coincide.`
          : html`— the runs
            differ${this.skipSpNormGradAllReduce && this.sp ? ' (skipnorm: each rank trained its own norm gains)' : ''}.`
      }
      Norm-gain spread across ranks:
      ${drift === 0 ? '0 (the all-reduce keeps every copy equal)' : drift.toExponential(2)}.
    </p>`;
  }

  protected override render(): TemplateResult {
    const running = this.runState === 'running';
    return html`<div class="controls">
        <label
          >steps K
          <input
            type="number"
            data-control="steps"
            min="1"
            max="500"
            .value=${String(this.steps)}
            ?disabled=${running}
            @change=${(e: Event) => {
              const k = parseSteps((e.target as HTMLInputElement).value);
              this.message = typeof k === 'string' ? k : '';
              if (typeof k === 'number') this.steps = k;
            }}
        /></label>
        <label
          ><input
            type="checkbox"
            data-control="sp"
            .checked=${this.sp}
            ?disabled=${running || this.tp === 1}
            @change=${(e: Event) => (this.sp = (e.target as HTMLInputElement).checked)}
          />
          sequence parallel</label
        >
        <label
          ><input
            type="checkbox"
            data-control="skipnorm"
            .checked=${this.skipSpNormGradAllReduce}
            ?disabled=${running || !this.sp || this.tp === 1}
            @change=${(e: Event) => (this.skipSpNormGradAllReduce = (e.target as HTMLInputElement).checked)}
          />
          skipnorm: skip the norm-gradient all-reduce</label
        >
        <button id="train" @click=${() => void this.train()} ?disabled=${running}>train ${this.steps} steps</button>
        <button id="cancel" @click=${() => this.cancel()} ?disabled=${!running}>Cancel</button>
      </div>
      <div class="status ${this.runState === 'error' ? 'error' : ''}" aria-live="polite">${this.message}</div>
      ${this.summary()}
      <tp-train-chart .points=${this.points} .steps=${this.steps} .tp=${this.tp}></tp-train-chart>
      <p>
        Each step: forward and backward of the whole layer on ${BATCH} × 8 characters of the Grimms' <i>Frog King</i>
        (character-level, 32 symbols), gradients from the ranks' real collectives, then Adam on every shard — on
        ${this.tp} rank${this.tp > 1 ? 's' : ''} and, from the same seed, at TP = 1.
        ${
          this.tp > 1
            ? html`With SP and <code>skipnorm</code>, each rank updates its copy of the RMSNorm gains from its own
                tokens only (Megatron's <code>finalize_model_grads</code> all-reduce skipped) and the copies drift
                apart.`
            : nothing
        }
      </p>`;
  }

  protected override updated(): void {
    this.dataset.state = this.runState;
    this.dataset.stepsDone = String(this.points.length);
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-classroom-train': TpClassroomTrain;
  }
}
