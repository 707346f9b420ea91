// Runs in the bench page (scripts/bench/bench-ui.ts): zoom/pan frame rate of <tp-timeline> over ≥ 5,000 events and its redraw time per TP change.
import { adapterName } from '../kernels/adapter.ts';
import { interconnectPresets, type InterconnectName } from '../hardware/interconnect.ts';
import { configFromPreset, type PresetName } from '../parallel/config.ts';
import { makePlan } from '../parallel/plan.ts';
import { modeledCommMs, sameComputeMs } from '../schedule/durations.ts';
import { scheduleStep, type ScheduledEvent, type Timeline } from '../schedule/schedule.ts';
import '../ui/timeline/tp-timeline.ts';
import type { TpTimeline } from '../ui/timeline/tp-timeline.ts';

/** A modeled step: compute at `gflops` GFLOP/s on every rank, comm from the alpha-beta ring of `net`. */
export async function modeledTimeline(
  preset: PresetName,
  tp: number,
  opts: { overlap?: boolean; net?: InterconnectName; gflops?: number; sp?: boolean } = {},
): Promise<Timeline> {
  const plan = (await makePlan(configFromPreset(preset, { tp, sp: opts.sp ?? false }))).plan;
  const perMs = (opts.gflops ?? 5) * 1e6;
  const computeMs = sameComputeMs(plan, (i) => Math.max(plan.ops[i]!.flops, 1e5) / perMs);
  return scheduleStep(
    plan,
    { computeMs, commMs: modeledCommMs(plan, interconnectPresets[opts.net ?? 'pcie-gen3']) },
    { overlap: opts.overlap ?? false },
  );
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
  const totals = tl.totals.map((t) => ({
    ...t,
    computeMs: n * t.computeMs,
    commMs: n * t.commMs,
    exposedMs: n * t.exposedMs,
    idleMs: n * t.idleMs,
    endMs: (n - 1) * tl.stepMs + t.endMs,
  }));
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

/** Frame statistics of a stretch of animation frames. */
export interface FrameStats {
  readonly frames: number;
  readonly fps: number;
  /** Median and 95th percentile frame interval, ms. */
  readonly medianMs: number;
  readonly p95Ms: number;
  readonly worstMs: number;
}

/** One redraw of the element for a new TP degree. */
export interface RedrawRow {
  readonly tp: number;
  readonly events: number;
  /** makePlan + scheduleStep (modeled durations), ms. */
  readonly scheduleMs: number;
  /** From setting `timeline` to the frame after the redrawn element rendered, ms. */
  readonly redrawMs: number;
}

/** What runUiBench measured. */
export interface UiBenchReport {
  readonly adapter: string;
  readonly hardwareConcurrency: number;
  readonly events: number;
  readonly blocks: number;
  /** First render of the long timeline, ms (to the next frame). */
  readonly firstDrawMs: number;
  readonly zoom: FrameStats;
  readonly pan: FrameStats;
  readonly all: FrameStats;
  readonly preset: PresetName;
  readonly redraws: readonly RedrawRow[];
}

/** Arguments of runUiBench. */
export interface UiBenchArgs {
  /** gpt2-layer steps at t = 4 to concatenate (4 ranks × 49 ops = 196 events per step). */
  readonly steps: number;
  /** Frames per stretch (zoom in, pan, zoom out). */
  readonly frames: number;
  readonly width: number;
  /** Preset and degrees of the redraw measurement. */
  readonly preset: PresetName;
  readonly degrees: readonly number[];
  readonly onProgress?: (line: string) => void;
}

/** Frame statistics over one or more stretches of frame timestamps (gaps between stretches are not frames). */
function stats(...stretches: readonly (readonly number[])[]): FrameStats {
  const gaps = stretches.flatMap((st) => st.slice(1).map((t, i) => t - st[i]!)).sort((a, b) => a - b);
  const at = (q: number): number => gaps[Math.min(gaps.length - 1, Math.floor(q * gaps.length))] ?? 0;
  const span = gaps.reduce((a, g) => a + g, 0);
  return {
    frames: gaps.length,
    fps: span > 0 ? (1000 * gaps.length) / span : 0,
    medianMs: at(0.5),
    p95Ms: at(0.95),
    worstMs: gaps[gaps.length - 1] ?? 0,
  };
}

/** Calls `step(i, n)` in `n` consecutive animation frames and returns the frames' timestamps. */
async function animate(n: number, step: (i: number, n: number) => void): Promise<number[]> {
  const stamps: number[] = [];
  for (let i = 0; i < n; i++) {
    stamps.push(await nextFrame());
    step(i, n);
  }
  stamps.push(await nextFrame());
  return stamps;
}

async function adapterLabel(): Promise<string> {
  const adapter = await navigator.gpu?.requestAdapter();
  return adapter ? adapterName(adapter) : 'no WebGPU adapter';
}

/**
 * (a) zoom in 500× around the middle, pan across the whole trace at 1/40 of it, zoom out, one
 * step per animation frame, over `steps` concatenated gpt2-layer t = 4 steps; (b) redraw for a new
 * modeled timeline per TP degree of `preset` (the layer run is not part of it).
 */
export async function runUiBench(args: UiBenchArgs): Promise<UiBenchReport> {
  const base = await modeledTimeline('gpt2-layer', 4, { overlap: true });
  const long = repeatSteps(base, args.steps);
  const t0 = performance.now();
  const el = await mountTimeline(long, args.width, `benchmark: ${args.steps} modeled gpt2-layer steps at t = 4`);
  const firstDrawMs = performance.now() - t0;
  const blocks = el.blocks().length;
  args.onProgress?.(`${long.events.length} events, ${blocks} blocks drawn in ${firstDrawMs.toFixed(0)} ms`);
  const T = long.stepMs;
  const mid = T / 2;
  const zoomIn = await animate(args.frames, (i, n) => {
    const w = T * Math.pow(1 / 500, (i + 1) / n);
    el.zoomTo(mid - w / 2, mid + w / 2);
  });
  const win = T / 40;
  const pan = await animate(args.frames, (i, n) => {
    const a = ((T - win) * i) / (n - 1);
    el.zoomTo(a, a + win);
  });
  const zoomOut = await animate(args.frames, (i, n) => {
    const w = win * Math.pow(40, (i + 1) / n);
    const c = Math.min(Math.max(T - win / 2, w / 2), T - w / 2);
    el.zoomTo(c - w / 2, c + w / 2);
  });
  args.onProgress?.(
    `zoom in ${stats(zoomIn).fps.toFixed(1)} fps, pan ${stats(pan).fps.toFixed(1)} fps, zoom out ${stats(zoomOut).fps.toFixed(1)} fps`,
  );
  el.remove();

  const redraws: RedrawRow[] = [];
  const small = await mountTimeline(undefined, args.width);
  for (const tp of args.degrees) {
    const s0 = performance.now();
    const tl = await modeledTimeline(args.preset, tp);
    const s1 = performance.now();
    small.timeline = tl;
    await small.updateComplete;
    await nextFrame();
    const s2 = performance.now();
    redraws.push({ tp, events: tl.events.length, scheduleMs: s1 - s0, redrawMs: s2 - s1 });
    args.onProgress?.(`${args.preset} t=${tp}: schedule ${(s1 - s0).toFixed(1)} ms, redraw ${(s2 - s1).toFixed(1)} ms`);
  }
  small.remove();
  return {
    adapter: await adapterLabel(),
    hardwareConcurrency: navigator.hardwareConcurrency,
    events: long.events.length,
    blocks,
    firstDrawMs,
    zoom: stats(zoomIn, zoomOut),
    pan: stats(pan),
    all: stats(zoomIn, pan, zoomOut),
    preset: args.preset,
    redraws,
  };
}
