import { afterEach, expect, test } from 'vitest';
import { classroomStepIds } from '../../../src/parallel/classroom.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { oracleTolerance } from '../../../src/parallel/oracle.ts';
import '../../../src/ui/classroom/tp-classroom.ts';
import type { TpClassroom } from '../../../src/ui/classroom/tp-classroom.ts';
import { until } from '../until.ts';

let el: TpClassroom | undefined;
afterEach(() => el?.remove());

const key = async (k: 'ArrowRight' | 'ArrowLeft') => {
  window.dispatchEvent(new KeyboardEvent('keydown', { key: k }));
  await el!.updateComplete;
};
const stepId = () => el!.shadowRoot!.querySelector('section')?.getAttribute('data-step-id');
const values = (label: string): number[] => {
  const fig = [...el!.shadowRoot!.querySelectorAll('figure')].find((f) => f.getAttribute('data-label') === label);
  if (!fig) throw new Error(`no panel "${label}"`);
  return [...fig.querySelectorAll('.grid span')].map((s) => Number(s.getAttribute('data-value')));
};

test('<tp-classroom> runs t = 2 on real ranks, steps forward and back through every step with the arrow keys and the buttons, and step 5 shows Σ Zᵢ equal to TP=1', async () => {
  el = document.createElement('tp-classroom');
  el.tp = 2;
  el.numbers = true; // the "numbers" switch: every matrix printed as a grid of its values
  document.body.append(el);
  await until(() => stepId() !== undefined && stepId() !== null, 60_000, 'the classroom shows its first step');
  const ids = [...classroomStepIds, 'train'];
  expect(stepId()).toBe(ids[0]);
  for (const id of ids.slice(1)) {
    await key('ArrowRight');
    expect(stepId()).toBe(id);
  }
  await key('ArrowRight'); // past the last: stays
  expect(stepId()).toBe(ids.at(-1));
  for (const id of ids.slice(0, -1).reverse()) {
    await key('ArrowLeft');
    expect(stepId()).toBe(id);
  }
  await key('ArrowLeft');
  expect(stepId()).toBe(ids[0]);
  const button = (id: string) => el!.shadowRoot!.querySelector<HTMLButtonElement>(`#${id}`)!;
  expect(button('prev').disabled).toBe(true);
  button('next').click();
  await el.updateComplete;
  expect(stepId()).toBe(ids[1]);
  button('prev').click();
  await el.updateComplete;
  expect(stepId()).toBe(ids[0]);
  for (let i = 0; i < 4; i++) await key('ArrowRight');
  expect(stepId()).toBe('all-reduce');
  // The numbers on screen: each rank's partial Zᵢ, their all-reduce, and TP=1 (rank 0 alone).
  const z0 = values('Z partial, rank 0'),
    z1 = values('Z partial, rank 1');
  const sum = values('Z = Σ Zᵢ (all-reduced)'),
    ref = values('Z at TP=1 (rank 0 alone)');
  expect(ref).toHaveLength(8 * 16);
  // Tolerance: the oracle's 16·ε·(K+1)·max|ref| with K = 32 (ffn): another float32 summation order.
  const tol = oracleTolerance(configFromPreset('classroom', { tp: 2 }), Math.max(...ref.map(Math.abs)));
  ref.forEach((r, i) => {
    expect(Math.abs(sum[i] - r)).toBeLessThanOrEqual(tol);
    expect(Math.abs(z0[i] + z1[i] - r)).toBeLessThanOrEqual(tol);
  });
  expect(Math.max(...ref.map((r, i) => Math.abs(z0[i] - r)))).toBeGreaterThan(100 * tol); // one partial alone is not the result
  const checks = [...el.shadowRoot!.querySelectorAll('.check')];
  expect(checks.length).toBeGreaterThan(0);
  checks.forEach((c) => expect(c.getAttribute('data-pass')).toBe('true'));
});
