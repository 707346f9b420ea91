import { afterEach, expect, test } from 'vitest';
import { projectedResult, type PlaygroundResult, type Projector } from '../../../src/session/playground-runner.ts';
import { PageRuns, type PageRunState } from '../../../src/ui/shell/page-runs.ts';
import { defaultSettings } from '../../../src/ui/settings/state.ts';
import { until } from '../until.ts';

let runs: PageRuns | undefined;
afterEach(() => runs?.dispose());

test('on a real cluster a run projects its timeline and accounting once: the projection drawn at once is the one the rank workers’ result shows', async () => {
  const projections: PlaygroundResult[] = [];
  const counted: Projector = (req, plan) => {
    const r = projectedResult(req, plan);
    projections.push(r);
    return r;
  };
  const states: PageRunState[] = [];
  runs = new PageRuns((s) => states.push(s), counted);
  // The default settings: the classroom layer at t = 2 on the catalog's default cluster.
  expect(defaultSettings.machine).toBe('cluster');
  runs.request(defaultSettings);
  await until(() => runs!.current.ranks === 'done' && !runs!.current.busy, 120_000, 'the rank workers finish the run');
  const drawn = states.find((s) => s.ranks === 'running')?.result;
  const done = runs.current.result!;
  expect(drawn, 'the projection is drawn before the workers finish').toBeDefined();
  expect(done.oracle?.pass).toBe(true);
  expect(done.timeline, 'the same timeline, not a second projection').toBe(drawn!.timeline);
  expect(done.accounting, 'the same accounting').toBe(drawn!.accounting);
  expect(done.computeSource).toBe(drawn!.computeSource);
  expect(projections).toEqual([drawn]);
});
