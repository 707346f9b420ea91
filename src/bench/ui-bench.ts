// Runs in the bench page (scripts/bench-ui.ts): zoom/pan frame rate of <tp-timeline> over ≥ 5,000 events and its redraw time per TP change.
import { adapterName } from '../kernels/adapter.ts';
import { interconnectPresets, type InterconnectName } from '../model/interconnect.ts';
import { configFromPreset, type PresetName } from '../parallel/config.ts';
import { makePlan } from '../parallel/plan.ts';
import { modeledCommMs, sameComputeMs } from '../trace/durations.ts';
import { scheduleStep, type ScheduledEvent, type Timeline } from '../trace/schedule.ts';
import '../ui/tp-timeline.ts';
import type { TpTimeline } from '../ui/tp-timeline.ts';

/** A modeled step: compute at `gflops` GFLOP/s on every rank, comm from the alpha-beta ring of `net`. */
export async function modeledTimeline(preset: PresetName, tp: number, opts: { overlap?: boolean; net?: InterconnectName; gflops?: number; sp?: boolean } = {}): Promise<Timeline> {
  const plan = (await makePlan(configFromPreset(preset, { tp, sp: opts.sp ?? false }))).plan;
  const perMs = (opts.gflops ?? 5) * 1e6;
  const computeMs = sameComputeMs(plan, (i) => Math.max(plan.ops[i]!.flops, 1e5) / perMs);
  return scheduleStep(plan, { computeMs, commMs: modeledCommMs(plan, interconnectPresets[opts.net ?? 'pcie-gen3']) }, { overlap: opts.overlap ?? false });
}

/** `n` copies of one step back to back (step k shifted by k·stepMs): a long trace with the real mix of blocks. */
export function repeatSteps(tl: Timeline, n: number): Timeline {
  const shift = (e: ScheduledEvent, d: number): ScheduledEvent => ({
    ...e,
    t0: e.t0 + d,
    t1: e.t1 + d,
    phases: e.phases.map((p) => ({ ...p, t0: p.t0 + d, t1: p.t1 + d })),
    exposed: e.exposed.map((x) => ({ t0: x.t0 + d, t1: x.t1 + d })),
  });
  const events: ScheduledEvent[] = [];
  for (let r = 0; r < tl.ranks; r++) {
    const mine = tl.events.filter((e) => e.rank === r);
    for (let k = 0; k < n; k++) for (const e of mine) events.push(shift(e, k * tl.stepMs));
  }
  const totals = tl.totals.map((t) => ({ ...t, computeMs: n * t.computeMs, commMs: n * t.commMs, exposedMs: n * t.exposedMs, idleMs: n * t.idleMs, endMs: (n - 1) * tl.stepMs + t.endMs }));
  return { ...tl, events, totals, stepMs: n * tl.stepMs };
}

/** Mounts a <tp-timeline> of `width` px in the page body and waits for its first render. */
export async function mountTimeline(tl: Timeline | undefined, width = 1400, caption = ''): Promise<TpTimeline> {
  const el = document.createElement('tp-timeline');
  el.style.width = `${width}px`;
  el.caption = caption;
  el.timeline = tl;
  document.body.append(el);
  await el.updateComplete;
  await nextFrame();
  return el;
}

/** Resolves at the next animation frame with its timestamp. */
export function nextFrame(): Promise<number> {
  return new Promise((resolve) => requestAnimationFrame(resolve));
}
