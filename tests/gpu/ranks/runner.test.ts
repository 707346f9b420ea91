import { afterAll, expect, test } from 'vitest';
import { interconnectPresets } from '../../../src/hardware/interconnect.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { PlaygroundRunner } from '../../../src/session/playground-runner.ts';
import { runSweep } from '../../../src/session/sweep.ts';

const runner = new PlaygroundRunner();
afterAll(() => runner.dispose());

test('the page runner re-runs the layer per degree, keeps the oracle passing and schedules t ranks', async () => {
  for (const tp of [1, 2, 4]) {
    const t0 = performance.now();
    const r = await runner.run({
      config: configFromPreset('classroom', { tp }),
      comm: interconnectPresets['pcie-gen3'],
      overlap: false,
    });
    console.log(
      `classroom t=${tp}: ${(performance.now() - t0).toFixed(0)} ms (SwiftShader; includes starting the ranks not started before)`,
    );
    expect(r.oracle?.pass).toBe(true);
    expect(r.timeline.ranks).toBe(tp);
    expect(r.timeline.totals.some((x) => x.exposedMs > 0)).toBe(tp > 1);
    expect(r.computeSource).toMatch(/measured on this machine's GPU/);
  }
  const again = performance.now();
  await runner.run({ config: configFromPreset('classroom', { tp: 4, sp: true }), comm: 'measured', overlap: true });
  console.log(`classroom t=4 SP, same workers: ${(performance.now() - again).toFixed(0)} ms`);
});

test('an illegal configuration is refused before any work, with the validation message', async () => {
  await expect(
    runner.run({ config: configFromPreset('classroom', { tp: 8 }), comm: 'measured', overlap: false }),
  ).rejects.toThrow(/heads \(4\) must be divisible by the TP degree t = 8/);
});

test('warming a degree while idle starts its ranks, and every degree up to it is then a re-run on the same workers', async () => {
  const fresh = new PlaygroundRunner();
  try {
    const config = configFromPreset('classroom', { tp: 1 });
    const pcie = interconnectPresets['pcie-gen3'];
    await fresh.run({ config, comm: pcie, overlap: false });
    expect(fresh.warmRanks()).toBe(1);
    fresh.prewarm(config, [2, 8]); // 8 is illegal for 4 heads: skipped
    await fresh.idle();
    expect(fresh.warmRanks()).toBe(2);
    expect(fresh.steppedRanks()).toBe(2);
    const t0 = performance.now();
    const r = await fresh.run({ config: { ...config, tp: 2 }, comm: pcie, overlap: false });
    console.log(`classroom t=1 → 2 on a warmed pool: ${(performance.now() - t0).toFixed(0)} ms (SwiftShader)`);
    expect(r.oracle?.pass).toBe(true);
    // Down to 1 and back to 2 re-forms the group over the same two workers, with real collectives each time.
    for (const tp of [1, 2]) {
      const again = await fresh.run({ config: { ...config, tp, sp: tp > 1 }, comm: 'measured', overlap: true });
      expect(again.oracle?.pass, `t=${tp}`).toBe(true);
      expect(again.timeline.ranks).toBe(tp);
    }
    expect(fresh.warmRanks()).toBe(2);
  } finally {
    await fresh.dispose();
  }
});

test("a run asked for while a warm-up starts its workers takes the warm step's place; a later warm-up steps the ranks that run left unused", async () => {
  const lines: string[] = [];
  let onStart: (() => void) | undefined;
  const r = new PlaygroundRunner((line) => {
    lines.push(line);
    if (/^starting .*rank worker/.test(line)) onStart?.();
  });
  try {
    const config = configFromPreset('classroom', { tp: 1 });
    const pcie = interconnectPresets['pcie-gen3'];
    await r.run({ config, comm: pcie, overlap: false });
    expect(r.steppedRanks()).toBe(1);
    // The run is asked for once the warm-up is starting t = 2's worker, as a quick second click would.
    let asked: Promise<unknown> | undefined;
    onStart = () => {
      onStart = undefined;
      asked = r.run({ config, comm: pcie, overlap: false });
    };
    lines.length = 0;
    r.prewarm(config, [2]);
    await r.idle();
    expect(asked).toBeDefined();
    await asked;
    expect(lines.filter((l) => /^starting 1 more rank worker/.test(l))).toHaveLength(1);
    expect(lines.some((l) => /^warming t = 2/.test(l))).toBe(false); // no warm step: the run took its turn
    expect(r.warmRanks()).toBe(2); // the worker is up …
    expect(r.steppedRanks()).toBe(1); // … but the t = 1 run stepped rank 0 alone
    // Idle again: the next warm-up steps rank 1 on the worker already there.
    lines.length = 0;
    r.prewarm(config, [2]);
    await r.idle();
    expect(lines.some((l) => /^starting/.test(l))).toBe(false);
    expect(lines.filter((l) => /^warming t = 2: one step on 2 ranks/.test(l))).toHaveLength(1);
    expect(r.steppedRanks()).toBe(2);
    // Stepped up to 2: warming 2 again does nothing.
    lines.length = 0;
    r.prewarm(config, [2]);
    await r.idle();
    expect(lines).toEqual([]);
    const again = await r.run({ config: { ...config, tp: 2 }, comm: 'measured', overlap: false });
    expect(again.oracle?.pass).toBe(true);
  } finally {
    await r.dispose();
  }
});

test("a sweep can borrow the runner's workers: its degrees run there, and a cancel stops it at the next phase and leaves the runner working", async () => {
  const lender = new PlaygroundRunner();
  try {
    const configs = [1, 2].map((tp) => configFromPreset('classroom', { tp }));
    const report = await runSweep({ configs, pools: lender, net: 'pcie-gen3' });
    expect(report.degrees.map((d) => [d.config.tp, d.oracle.pass])).toEqual([
      [1, true],
      [2, true],
    ]);
    expect(lender.warmRanks()).toBe(2); // the sweep's ranks are the runner's
    const abort = new AbortController();
    const seen: string[] = [];
    const cancelled = runSweep({
      configs,
      pools: lender,
      signal: abort.signal,
      onProgress: (l) => {
        seen.push(l);
        if (/step on/.test(l)) abort.abort(new Error('cancelled by the test'));
      },
    });
    await expect(cancelled).rejects.toThrow('cancelled by the test');
    expect(seen.some((l) => /timing rank/.test(l))).toBe(false); // stopped before timing
    const after = await lender.run({ config: configs[1], comm: 'measured', overlap: true });
    expect(after.oracle?.pass).toBe(true);
  } finally {
    await lender.dispose();
  }
});
