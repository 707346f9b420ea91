// The classroom's pipeline and ZeRO-1 steps end to end (built page): a t 1 × p 2 × d 2 mesh with the distributed optimizer on 4 rank workers, the numbers shown checked against the run's own outputs.
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type OpenPage } from '../../scripts/device/browser-run.ts';
import type { PipelineRunResult } from '../../src/session/pipeline-run.ts';
import { hashFromSettings, settingsFromHash } from '../../src/ui/settings/state.ts';
import { openE2ePage } from './built-page.ts';

const runTimeout = 240_000;
const hash = '#view=classroom&tp=1&pp=2&dp=2&m=2&layers=4&schedule=1f1b&distopt=1&machine=custom';
let open: OpenPage;
let page: Page;

const card = () => page.locator('[data-mesh-classroom]');
const values = async (label: string): Promise<number[]> =>
  JSON.parse((await card().locator(`tr[data-fact="${label}"]`).getAttribute('data-values')) ?? 'null') as number[];
const printed = (label: string) => card().locator(`tr[data-fact="${label}"] td.v`).textContent();
const open_ = (id: string) => card().locator(`button[data-outline="mesh"][data-step="${id}"]`).click();

/** What the run returned, read off the element's `result` (the numbers the test checks the shown ones against). */
interface RunNumbers {
  act: { shape: number[]; values: number[] };
  bubble: number;
  idle: number[];
  shardElems: number[];
  locals: number[][];
  received: number[];
  after: number[];
}

describe('the classroom mesh steps on t 1 × p 2 × d 2 rank workers with the distributed optimizer (built page)', () => {
  let run: RunNumbers;
  beforeAll(async () => {
    open = await openE2ePage(`/${hash}`, { viewport: { width: 1280, height: 800 } });
    page = open.page;
  }, 180_000);
  afterAll(async () => {
    await open?.close();
  });

  test('the boundary tensor and the bubble shown are the run’s', { timeout: runTimeout + 60_000 }, async () => {
    const canonical = hashFromSettings(settingsFromHash(hash).settings);
    await expect.poll(() => card().getAttribute('data-mesh-shown'), { timeout: runTimeout }).toBe(canonical);
    run = await card()
      .locator('tp-mesh-classroom')
      .evaluate((el): RunNumbers => {
        const r = (el as unknown as { result: PipelineRunResult }).result;
        const at = (pp: number, dp: number) =>
          r.outputs[r.places.findIndex((c) => c.pp === pp && c.dp === dp && c.tp === 0)]!;
        const act = at(1, 0).boundaries!.find((b) => b.tensor === 'act.0.0')!;
        const zs = [at(0, 0).zero!, at(0, 1).zero!];
        return {
          act: { shape: [...act.shape], values: [...act.values] },
          bubble: r.measured.bubbleShare,
          idle: [...r.measured.idleShare],
          shardElems: zs.map((z) => z.end - z.start),
          locals: zs.map((z) => [...z.local[1]!]),
          received: [...zs[1]!.grad],
          after: [...zs[1]!.paramAfter],
        };
      });
    await open_('pp-boundary');
    expect(await values('act.0.0 shape')).toEqual(run.act.shape);
    expect(await values('act.0.0 bytes')).toEqual([4 * run.act.shape.reduce((a, x) => a * x, 1)]);
    expect(await values('act.0.0 values')).toEqual(run.act.values);
    expect(run.act.values.some((x) => x !== 0)).toBe(true);
    expect(await printed('act.0.0 values')).toBe(run.act.values.map((x) => x.toPrecision(4)).join('  '));
    await open_('pp-order');
    // 1F1B at p 2, m 2: stage 0 runs p − 0 − 1 = 1 warm-up forward and then its steady-state forward before
    // its first backward (2); the last stage alternates from the start (1).
    expect(await values('stage 0: forwards before its first backward')).toEqual([2]);
    expect(await values('stage 1: forwards before its first backward')).toEqual([1]);
    await open_('pp-bubble');
    expect(await values('measured bubble (busiest stage)')).toEqual([run.bubble]);
    expect(await values('measured idle share per stage')).toEqual(run.idle);
    expect(await printed('measured bubble (busiest stage)')).toBe(run.bubble.toFixed(3));
    await page.screenshot({ path: 'test-results/mesh-classroom-1280x800.png' });
  });

  test('ZeRO-1: the shards, the reduce-scatter’s mean, the sharded Adam step and the all-gather are the run’s', async () => {
    await open_('zero-shards');
    expect(await values('shard elements per replica')).toEqual(run.shardElems);
    expect(run.shardElems[0]).toBe(run.shardElems[1]);
    await open_('zero-reduce-scatter');
    expect(await values("replica 0's own gradient")).toEqual(run.locals[0]);
    expect(await values("replica 1's own gradient")).toEqual(run.locals[1]);
    expect(await values('received by replica 1')).toEqual(run.received);
    // What replica 1 received is the two replicas' mean: float32 (a/2 + b/2), ≤ 1 ulp of the mean from the exact one.
    run.received.forEach((g, i) => {
      const mean = (run.locals[0]![i]! + run.locals[1]![i]!) / 2;
      expect(Math.abs(g - mean)).toBeLessThanOrEqual(2 ** -23 * Math.abs(mean));
    });
    await open_('zero-adam');
    expect(await values('weight after')).toEqual(run.after);
    await open_('zero-all-gather');
    // Every replica holds, after the all-gather, exactly the values replica 1's Adam wrote (a copy, no arithmetic).
    expect(await values('replica 0 holds')).toEqual(run.after);
    expect(await values('replica 1 holds')).toEqual(run.after);
    await page.setViewportSize({ width: 1920, height: 1080 });
    await page.screenshot({ path: 'test-results/mesh-classroom-1920x1080.png' });
    expect(open.pageErrors).toEqual([]);
  });
});
