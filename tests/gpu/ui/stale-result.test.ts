import { afterEach, expect, test } from 'vitest';
import { configFromPreset } from '../../../src/parallel/config.ts';
import type { LayerWorkerPrograms, PoolLender } from '../../../src/session/layer-run.ts';
import { createLayerPool } from '../../../src/session/pools.ts';
import type { RankPool } from '../../../src/ranks/pool.ts';
import '../../../src/ui/classroom/tp-classroom-run.ts';
import type { TpClassroomRun } from '../../../src/ui/classroom/tp-classroom-run.ts';
import { until } from '../until.ts';

let el: TpClassroomRun | undefined;
afterEach(() => el?.remove());

/**
 * A lender of real rank pools (each call starts t workers and stops them after) that holds its
 * first call until the test opens it: so the first request resolves after the second.
 */
class HoldFirstLender implements PoolLender {
  calls = 0;
  finished = 0;
  open!: () => void;
  readonly #gate = new Promise<void>((r) => (this.open = r));

  async withPool<R>(t: number, fn: (pool: RankPool<LayerWorkerPrograms>) => Promise<R>): Promise<R> {
    if (this.calls++ === 0) await this.#gate;
    const pool = await createLayerPool(t);
    try {
      return await fn(pool);
    } finally {
      await pool.dispose();
      this.finished++;
    }
  }
}

const caption = (): string =>
  el!.shadowRoot!.querySelector('tp-timeline')?.getAttribute('caption') ?? '(no timeline drawn)';

test('<tp-classroom-run>: an older run resolving after a newer one never reaches the element', async () => {
  const lender = new HoldFirstLender();
  el = document.createElement('tp-classroom-run');
  el.pools = lender;
  el.config = configFromPreset('classroom', { tp: 2 });
  el.slow = { rank: 1, factor: 4 }; // the older request: rank 1 slowed, held by the lender
  document.body.append(el);
  await until(() => lender.calls === 1, 10_000, 'the first run asks for its pool');
  el.slow = null; // the newer request: no slowdown, runs at once
  await until(() => el!.dataset.state === 'done', 120_000, 'the newer run is shown');
  const newer = el.result;
  expect(newer?.slow).toBeNull();
  expect(caption()).not.toContain('#slow');

  lender.open(); // the older run now runs to its end on real ranks, after the newer one
  await until(() => lender.finished === 2, 120_000, 'the older run ends');
  await el.updateComplete;
  expect(el.result).toBe(newer);
  expect(el.dataset.state).toBe('done');
  expect(el.dataset.straggler).toBe(String(newer!.stragglers.verdict.straggler));
  expect(caption()).not.toContain('#slow');
  expect(el.shadowRoot!.querySelector('.calls')).toBeNull();
});
