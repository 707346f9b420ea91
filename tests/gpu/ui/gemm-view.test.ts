import { afterEach, expect, test } from 'vitest';
import { configFromPreset } from '../../../src/parallel/config.ts';
import '../../../src/ui/gemm/tp-gemm-view.ts';
import type { TpGemmView } from '../../../src/ui/gemm/tp-gemm-view.ts';
import { until } from '../until.ts';

let el: TpGemmView | undefined;
afterEach(() => el?.remove());

const q = <E extends Element>(sel: string): E[] => [...el!.shadowRoot!.querySelectorAll<E>(sel)];

test('<tp-gemm-view> sweeps the classroom at t = 1, 2, 4 on real ranks (t = 8 skipped with its reason): column-parallel GEMMs get N/t, row-parallel K/t, each with a GFLOP/s figure', async () => {
  el = document.createElement('tp-gemm-view');
  el.config = configFromPreset('classroom');
  document.body.append(el);
  await until(
    () => q('td[data-t]').length > 0 || q('.error').length > 0,
    110_000,
    'the sweep fills the table (or fails)',
    100,
  );
  expect(q('.error').map((e) => e.textContent)).toEqual([]);
  expect(q('[data-skipped-t]').map((e) => e.getAttribute('data-skipped-t'))).toEqual(['8']);
  expect(q('[data-skipped-t]')[0].textContent).toMatch(/heads/);
  const cell = (g: string, t: number) => {
    const td = q<HTMLElement>(`td[data-gemm="${g}"][data-t="${t}"]`)[0];
    return {
      M: Number(td.dataset.m),
      N: Number(td.dataset.n),
      K: Number(td.dataset.k),
      gflops: Number(td.dataset.gflops),
    };
  };
  for (const t of [1, 2, 4]) {
    for (const g of ['mlp.gate', 'mlp.up', 'logits'])
      expect(cell(g, t), `${g} t=${t}`).toMatchObject({ M: cell(g, 1).M, N: cell(g, 1).N / t, K: cell(g, 1).K });
    // linear_qkv: Q, K, V GEMMs while the 2 KV groups ≥ t; at t = 4 one GEMM over W/t of the
    // W = (4 + 2·2)·4 = 32 columns (Megatron-Core's even split, then an all-gather).
    const qkv = t > 2 ? cell('qkv', t) : cell('qkv.q', t);
    expect(qkv, `linear_qkv t=${t}`).toMatchObject({
      M: cell('qkv.q', 1).M,
      N: t > 2 ? 32 / t : cell('qkv.q', 1).N / t,
      K: cell('qkv.q', 1).K,
    });
    for (const g of ['attn.proj', 'mlp.down'])
      expect(cell(g, t), `${g} t=${t}`).toMatchObject({ M: cell(g, 1).M, N: cell(g, 1).N, K: cell(g, 1).K / t });
    for (const td of q<HTMLElement>(`td[data-t="${t}"]`))
      expect(Number(td.dataset.gflops), `${td.dataset.gemm} t=${t}`).toBeGreaterThan(0);
  }
  expect(q('table.steps tbody tr').map((r) => r.getAttribute('data-t'))).toEqual(['1', '2', '4']);
  expect(q('svg#speedup [data-series]').length).toBe(3);
  expect(q('svg#gflops [data-series]').map((s) => s.getAttribute('data-series'))).toContain('mlp.down');
});

test('<tp-gemm-view>: Cancel stops a sweep and says so', async () => {
  el = document.createElement('tp-gemm-view');
  el.config = configFromPreset('classroom');
  document.body.append(el);
  await el.updateComplete;
  el.cancel();
  await until(() => q('.error').length > 0, 110_000, 'the cancelled sweep says so', 100);
  expect(q('.error')[0].textContent).toBe('Sweep cancelled.');
  expect(q('td[data-t]')).toEqual([]);
  expect(q<HTMLButtonElement>('#run')[0].disabled).toBe(false);
});
