// Worker that runs the overlap ablation off the page's thread (up to 64 step projections over up to 8 layer pricings).
import * as Comlink from 'comlink';
import type { TrainDtype } from '../../hardware/dtype.ts';
import type { SystemSpec } from '../../hardware/systems.ts';
import type { TrainingSetup } from '../../megatron/training-setup.ts';
import { ablateOverlaps, type OverlapAblation } from '../../projection/studies/overlap-ablation.ts';

/** What the panel asks: the setup (its overlap switches are ignored), a catalog or custom system by name, the dtype. */
export interface AblationQuery {
  readonly setup: TrainingSetup;
  readonly system: SystemSpec;
  readonly dtype: TrainDtype;
}

/** The ablation and its wall time here (ms). */
export interface AblationAnswer extends OverlapAblation {
  readonly ms: number;
}

const api = {
  /** The ablation of `q.setup` (src/projection/studies/overlap-ablation.ts, as `npm run project -- --ablate`). */
  async ablate(q: AblationQuery): Promise<AblationAnswer> {
    const started = performance.now();
    const a = await ablateOverlaps(q.setup, { system: q.system, dtype: q.dtype });
    return { ...a, ms: performance.now() - started };
  },
};

/** The worker's interface (for Comlink.wrap). */
export type AblationWorker = typeof api;

Comlink.expose(api);
