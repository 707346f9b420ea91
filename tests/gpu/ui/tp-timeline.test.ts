import { afterEach, describe, expect, test } from 'vitest';
import { interconnectPresets } from '../../../src/hardware/interconnect.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { makePlan } from '../../../src/parallel/plan.ts';
import type { LayerPlan } from '../../../src/parallel/plan-types.ts';
import { modeledCommMs, sameComputeMs } from '../../../src/schedule/durations.ts';
import { scheduleStep, type Timeline } from '../../../src/schedule/schedule.ts';
import '../../../src/ui/timeline/tp-timeline.ts';
import type { TpTimeline } from '../../../src/ui/timeline/tp-timeline.ts';

/** gpt2-layer at t: compute at 5 GFLOP/s, comm modeled on PCIe Gen3. */
async function gpt2(tp: number, overlap: boolean): Promise<{ plan: LayerPlan; tl: Timeline }> {
  const plan = (await makePlan(configFromPreset('gpt2-layer', { tp }))).plan;
  const tl = scheduleStep(
    plan,
    {
      computeMs: sameComputeMs(plan, (i) => plan.ops[i]!.flops / 5e6),
      commMs: modeledCommMs(plan, interconnectPresets['pcie-gen3']),
    },
    { overlap },
  );
  return { plan, tl };
}

const frame = () => new Promise<number>((r) => requestAnimationFrame(r));

async function mount(
  tl: Timeline,
  props: Partial<Pick<TpTimeline, 'phase' | 'caption'>> = {},
  width = 1200,
): Promise<TpTimeline> {
  const el = document.createElement('tp-timeline');
  el.style.width = `${width}px`;
  Object.assign(el, props);
  el.timeline = tl;
  document.body.append(el);
  await el.updateComplete;
  await frame();
  return el;
}

const q = (el: TpTimeline, sel: string) => [...el.shadowRoot!.querySelectorAll(sel)];

afterEach(() => {
  for (const el of document.querySelectorAll('tp-timeline')) el.remove();
});

describe('<tp-timeline> on a scheduled gpt2-layer step', () => {
  test('t = 4 draws exactly 4 ranks × a compute and a comm lane, each named', async () => {
    const el = await mount((await gpt2(4, false)).tl);
    const lanes = q(el, 'g[data-lane]').map((g) => `${g.getAttribute('data-rank')}:${g.getAttribute('data-lane')}`);
    expect(lanes.sort()).toEqual([
      '0:comm',
      '0:compute',
      '1:comm',
      '1:compute',
      '2:comm',
      '2:compute',
      '3:comm',
      '3:compute',
    ]);
    const names = q(el, 'text.lane-name').map((t) => t.textContent);
    expect(names).toEqual([0, 1, 2, 3].flatMap((r) => [`rank ${r} · compute`, `rank ${r} · comm`]));
  });

  test('every compute op of the plan has a compute block on every rank, inside that rank’s compute lane', async () => {
    const { plan, tl } = await gpt2(4, false);
    const el = await mount(tl);
    const ops = plan.ops.filter((o) => o.kind !== 'collective').map((o) => o.name);
    for (let r = 0; r < 4; r++) {
      const lane = el.shadowRoot!.querySelector(`g[data-lane="compute"][data-rank="${r}"]`)!;
      expect([...lane.querySelectorAll('[data-kind="compute"]')].map((b) => b.getAttribute('data-op'))).toEqual(ops);
    }
    expect(el.blocks('compute').length).toBe(4 * ops.length);
  });

  test('every block carries data-rank, data-kind and data-op, and blocks() finds the same elements as a shadow-root query', async () => {
    const el = await mount((await gpt2(4, false)).tl);
    const all = q(el, '[data-kind]').filter((n) => n.tagName === 'rect');
    expect(all.length).toBe(el.blocks().length);
    for (const b of all) {
      expect(['0', '1', '2', '3']).toContain(b.getAttribute('data-rank'));
      expect(['compute', 'comm', 'exposed']).toContain(b.getAttribute('data-kind'));
      expect(b.getAttribute('data-op')).toMatch(/^[a-z]/);
    }
    expect(q(el, '[data-kind="exposed"]')).toEqual(el.blocks('exposed'));
  });

  test('modeled PCIe without overlap exposes every all-reduce; with overlap the backward dgrad reduces hide and fewer exposed blocks remain', async () => {
    const off = await mount((await gpt2(4, false)).tl);
    const exposedOff = off.blocks('exposed');
    expect(exposedOff.length).toBe(4 * 4);
    expect(exposedOff.every((b) => b.closest('g[data-lane]')!.getAttribute('data-lane') === 'comm')).toBe(true);
    expect(exposedOff.map((b) => b.getAttribute('data-op'))).toContain('attn.dgrad.reduce');
    off.remove();
    const on = await mount((await gpt2(4, true)).tl);
    const exposedOn = on.blocks('exposed');
    expect(exposedOn.length).toBeGreaterThan(0);
    expect(exposedOn.length).toBeLessThan(exposedOff.length);
    expect(exposedOn.map((b) => b.getAttribute('data-op'))).not.toContain('attn.dgrad.reduce');
  });

  test('t = 1 has one rank’s two lanes and no exposed block', async () => {
    const el = await mount((await gpt2(1, false)).tl);
    expect(q(el, 'g[data-lane]').length).toBe(2);
    expect(el.blocks('exposed')).toEqual([]);
    expect(el.blocks('compute').length).toBeGreaterThan(0);
  });

  test('zooming narrows the visible window, the wheel zooms too, and reset shows the whole step again', async () => {
    const { tl } = await gpt2(4, false);
    const el = await mount(tl);
    const [a0, a1] = el.visibleDomain();
    expect(a0).toBeCloseTo(0, 9);
    expect(a1).toBeCloseTo(tl.stepMs, 9);
    const seen: number[][] = [];
    el.addEventListener('timeline-zoom', (ev) =>
      seen.push([(ev as CustomEvent).detail.t0, (ev as CustomEvent).detail.t1]),
    );
    el.zoomTo(0, 6);
    const [b0, b1] = el.visibleDomain();
    expect(b0).toBeCloseTo(0, 6);
    expect(b1).toBeCloseTo(6, 6);
    expect(seen.at(-1)![1]).toBeCloseTo(6, 6);
    // At 6 ms across the plot the query GEMM is wide enough for its local shape.
    expect(q(el, '.labels text').map((t) => t.textContent)).toContain('qkv.q [32,768]·[768,192]');
    el.resetZoom();
    const rect = el.blocks('compute')[10]!;
    const box = rect.getBoundingClientRect();
    rect.dispatchEvent(
      new WheelEvent('wheel', {
        deltaY: -500,
        clientX: box.left + 2,
        clientY: box.top + 5,
        bubbles: true,
        cancelable: true,
        composed: true,
      }),
    );
    const [c0, c1] = el.visibleDomain();
    expect(c1 - c0).toBeCloseTo(tl.stepMs / 2, 6);
    el.resetZoom();
    expect(el.visibleDomain()[1]).toBeCloseTo(tl.stepMs, 9);
  });

  test('the forward view shows only forward blocks and ends at the forward pass’s end', async () => {
    const { tl } = await gpt2(4, false);
    const el = await mount(tl, { phase: 'forward' });
    const phases = new Set(el.blocks().map((b) => b.getAttribute('data-phase')));
    expect([...phases]).toEqual(['forward']);
    const fwdEnd = Math.max(...tl.events.filter((e) => e.phase === 'forward').map((e) => e.t1));
    expect(el.visibleDomain()[1]).toBeCloseTo(fwdEnd, 9);
    el.phase = 'backward';
    await el.updateComplete;
    expect(new Set(el.blocks().map((b) => b.getAttribute('data-phase')))).toEqual(new Set(['backward']));
  });

  test('hovering a GEMM shows M, N, K, FLOPs and GFLOP/s; hovering an exposed part says it is exposed', async () => {
    const el = await mount((await gpt2(4, false)).tl);
    const tip = el.shadowRoot!.querySelector<HTMLElement>('.tip')!;
    const hover = (b: Element) => {
      const r = b.getBoundingClientRect();
      b.dispatchEvent(
        new PointerEvent('pointermove', { clientX: r.left + 1, clientY: r.top + 2, bubbles: true, composed: true }),
      );
    };
    hover(el.blocks('compute').find((b) => b.getAttribute('data-op') === 'qkv.q')!);
    expect(tip.hidden).toBe(false);
    expect(tip.textContent).toMatch(/M 32 · N 192 · K 768/);
    expect(tip.textContent).toMatch(/9\.44 MFLOP · 5 GFLOP\/s/);
    hover(el.blocks('exposed')[0]!);
    expect(tip.textContent).toMatch(/^.*\nEXPOSED /);
    expect(tip.textContent).toMatch(/payload 96 KiB/);
  });

  test('the caption, the legend and the per-rank and step totals are shown', async () => {
    const { tl } = await gpt2(4, false);
    const el = await mount(tl, { caption: 'compute: modeled at 5 GFLOP/s · comm: modeled PCIe Gen3' });
    expect(el.shadowRoot!.querySelector('.caption')!.textContent).toBe(
      'compute: modeled at 5 GFLOP/s · comm: modeled PCIe Gen3',
    );
    expect(el.shadowRoot!.querySelector('.legend')!.textContent).toMatch(/exposed/);
    const totals = q(el, 'text.lane-total').map((t) => t.textContent);
    expect(totals.length).toBe(8);
    expect(totals[1]).toMatch(/^comm 150 µs · exposed 150 µs$/);
    expect(el.shadowRoot!.querySelector('text.step-total')!.textContent).toBe('step 91.5 ms (rank 0)');
    expect(q(el, 'line.step-end').length).toBe(1);
  });

  test('in a narrow element the totals drop the words the lane names already say and the whole chart fits the element', async () => {
    const el = await mount((await gpt2(4, false)).tl, {}, 860);
    const totals = q(el, 'text.lane-total').map((t) => t.textContent);
    expect(totals[0]).toBe('91.4 ms');
    expect(totals[1]).toBe('150 µs · exposed 150 µs');
    const svg = el.shadowRoot!.querySelector('svg.plot')!;
    expect(svg.getBoundingClientRect().width).toBeLessThanOrEqual(860);
    for (const t of q(el, 'text.lane-total'))
      expect(t.getBoundingClientRect().right).toBeLessThanOrEqual(svg.getBoundingClientRect().right + 0.5);
  });
});
