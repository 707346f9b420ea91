import { afterEach, expect, test, vi } from 'vitest';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { TpClusterPanel } from '../../../src/ui/cluster/tp-cluster-panel.ts';
import { until } from '../until.ts';

let el: TpClusterPanel | undefined;
afterEach(() => {
  el?.remove();
  vi.restoreAllMocks();
});

const q = <E extends Element>(sel: string): E[] => [...el!.shadowRoot!.querySelectorAll<E>(sel)];
const memoryHeading = (): string =>
  q('tp-live-memory[data-cluster-memory]')[0]?.getAttribute('heading') ?? '(no memory chart)';

test("<tp-cluster-panel>: a new config with only the page's t changed draws that t's memory without projecting again; new sizes project again", async () => {
  // The projection covers every degree of the budget (30–130 ms on the main thread here), and the
  // page hands the panel a new config object on each of its renders, 4–5 per TP change.
  const project = vi.spyOn(TpClusterPanel.prototype as unknown as { project(): Promise<void> }, 'project');
  el = document.createElement('tp-cluster-panel');
  el.config = configFromPreset('classroom', { tp: 2 });
  document.body.append(el);
  await until(() => memoryHeading().includes('t = 2'), 30_000, 'the projection draws t = 2’s memory');
  expect(q('[data-cluster-error]').map((e) => e.textContent)).toEqual([]);
  const rows = q('tr[data-tp]').length;
  expect(rows).toBeGreaterThan(0);
  expect(project).toHaveBeenCalledTimes(1);

  for (const tp of [4, 1, 4]) {
    el.config = configFromPreset('classroom', { tp });
    await el.updateComplete;
    expect(memoryHeading(), `t = ${tp}`).toContain(`t = ${tp},`);
  }
  el.config = { ...configFromPreset('classroom', { tp: 4 }) };
  await el.updateComplete;
  expect(project).toHaveBeenCalledTimes(1);
  expect(q('tr[data-tp]').length).toBe(rows);

  el.config = configFromPreset('classroom', { tp: 4, s: 2 * configFromPreset('classroom').s });
  await el.updateComplete;
  expect(project).toHaveBeenCalledTimes(2);
});
