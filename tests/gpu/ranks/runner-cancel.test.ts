import { afterAll, expect, test } from 'vitest';
import { interconnectPresets } from '../../../src/hardware/interconnect.ts';
import { memoryBudget } from '../../../src/accounting/budget.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { PlaygroundRunner } from '../../../src/session/playground-runner.ts';

const runner = new PlaygroundRunner();
afterAll(() => runner.dispose());
const request = (tp: number) => ({
  config: configFromPreset('classroom', { tp }),
  comm: interconnectPresets['pcie-gen3'],
  overlap: false,
});

test('a run aborted while it runs stops at its next phase with the reason, and the next run passes on the same workers', async () => {
  const abort = new AbortController();
  const phases: string[] = [];
  const cancelling = new PlaygroundRunner((line) => {
    phases.push(line);
    if (/TP=1 reference|step on/.test(line)) abort.abort(new DOMException('the settings changed', 'AbortError'));
  });
  try {
    const stopped = cancelling.run(request(2), abort.signal);
    await expect(stopped).rejects.toThrow('the settings changed');
    expect(phases.some((p) => /timing rank/.test(p))).toBe(false); // it stopped before the later phases
    const next = await cancelling.run(request(2));
    expect(next.oracle?.pass).toBe(true);
    expect(cancelling.warmRanks()).toBe(2); // the same pool: an abort does not break it
  } finally {
    await cancelling.dispose();
  }
});

test('a request aborted before its turn does not start', async () => {
  const abort = new AbortController();
  abort.abort(new DOMException('superseded', 'AbortError'));
  await expect(runner.run(request(1), abort.signal)).rejects.toThrow('superseded');
  expect(runner.warmRanks()).toBe(0); // no worker was started for it
});

test('a configuration over the budget is refused before any worker starts', async () => {
  const small = new PlaygroundRunner();
  small.budget = memoryBudget(1 / 16_384); // a quarter of 64 KiB: less than the classroom layer needs (241 KiB)
  try {
    await expect(small.run(request(2))).rejects.toThrow(
      /^Over budget: this run needs .* more than the page budget of 16 KiB/,
    );
    expect(small.warmRanks()).toBe(0);
  } finally {
    await small.dispose();
  }
});
