import type { Degrees } from '../../megatron/training-setup.ts';
import type { Interconnect } from '../../hardware/interconnect.ts';
import type { Timeline } from '../../schedule/schedule.ts';
import type { LayerPlan } from '../../parallel/plan-types.ts';
import { groupLinks } from './group-links.ts';
import type { GroupKind } from './placement.ts';
import { linksUsed, type PricedKind } from './placement-links.ts';
import { projectLayer, type Machine } from '../layer/projected-layer.ts';
import { stagePieces, type StagePieces } from '../layer/stage-pieces.ts';

/**
 * Two overlapped communications on one physical link split its bandwidth.
 *
 * Rule: max-min fair share (D. Bertsekas, R. Gallager, "Data Networks", 2nd ed., §6.5.2): flows
 * that could each fill a link of capacity C alone get C/n each while n of them are active, a flow
 * that finishes hands its share to the others. It is the C/n rule placement-links.ts already
 * applies to the rings of one kind crossing a link; here it applies across kinds, to transfers
 * that the step's schedule runs at the same time. Each transfer is given as its alone-time on
 * the link (bytes / C, the alpha-beta model's β term): a transfer sharing the link with one other
 * for its whole life takes twice its alone-time, and delays the other by its own alone-time.
 */
export interface LinkTransfer {
  /** When it is issued, ms. */
  readonly startMs: number;
  /** Its time on the link alone (bytes / bandwidth), ms. */
  readonly aloneMs: number;
}

/** Finish time of each transfer on one link shared max-min fairly (processor sharing), ms. */
export function fairShareFinish(transfers: readonly LinkTransfer[]): number[] {
  for (const x of transfers)
    if (!(x.aloneMs >= 0) || !Number.isFinite(x.startMs))
      throw new Error(`a link transfer needs a finite start and a non-negative time; got ${JSON.stringify(x)}.`);
  const left = transfers.map((x) => x.aloneMs);
  const done = transfers.map((x) => (x.aloneMs === 0 ? x.startMs : Number.NaN));
  let t = Math.min(Infinity, ...transfers.map((x) => x.startMs));
  for (;;) {
    const active = transfers.flatMap((x, i) => (x.startMs <= t && Number.isNaN(done[i]!) ? [i] : []));
    const nextStart = Math.min(
      Infinity,
      ...transfers.map((x, i) => (x.startMs > t && Number.isNaN(done[i]!) ? x.startMs : Infinity)),
    );
    if (!active.length) {
      if (nextStart === Infinity) return done;
      t = nextStart;
      continue;
    }
    // Each active transfer drains at 1/n of the link: the first to finish does so after n · its remainder.
    const n = active.length;
    const dt = Math.min(nextStart - t, ...active.map((i) => n * left[i]!));
    for (const i of active) {
      left[i] = left[i]! - dt / n;
      if (left[i]! <= 1e-12 * Math.max(1, transfers[i]!.aloneMs)) done[i] = t + dt;
    }
    t += dt;
  }
}

/** A group kind whose traffic can run beside the overlapped DP × CP collectives. */
export type SharingPartner = 'tp' | 'pp';

/** A physical link the DP × CP group shares with another group kind. */
export interface SharedLink {
  readonly with: SharingPartner;
  /** The link, in words. */
  readonly link: string;
}

/**
 * The links the DP × CP gradient group shares with the TP and pipeline groups on `machine` for
 * degrees `d`. Placed (Machine.placed): the shared physical links placement-links.ts found
 * (Machine.placedShared). Otherwise group-links.ts's rank-order links: a group that crosses nodes
 * leaves each GPU through the NIC nearest it (NCCL's topology search; one NIC per GPU on DGX
 * H100), a group within the node through the GPU's intra-node port (NVLink / NVSwitch port, or
 * PCIe), so two groups of more than one rank share a link when both cross nodes or both stay in.
 */
export function dpSharedLinks(machine: Machine, d: Degrees): SharedLink[] {
  if (d.dp * d.cp <= 1) return [];
  const size: Record<SharingPartner, number> = { tp: d.tp, pp: d.pp };
  const partners = (['tp', 'pp'] as const).filter((k) => size[k] > 1);
  if (machine.placed)
    return partners.flatMap((k) => {
      const link = machine.placedShared?.[k];
      return link ? [{ with: k, link }] : [];
    });
  const links = groupLinks(machine.system, d);
  const where = (l: Interconnect): string =>
    l.name === 'inter-node'
      ? `the NIC nearest each GPU (${machine.system.inter.label})`
      : `each GPU's intra-node port (${machine.system.intra.label})`;
  const dp = where(links.dpCp);
  return partners.flatMap((k) => (where(links[k]) === dp ? [{ with: k, link: dp }] : []));
}

/**
 * What sharing a link cost the step, per overlapped DP collective and partner (the slowest stage's
 * figures): how long the two were on the link together, how much later the stage's compute and
 * the DP stream end because of it, and what the step lost (counted in the exposed DP time).
 */
export interface LinkSharingCost {
  readonly overlap: 'overlapGradReduce' | 'overlapParamGather';
  readonly with: SharingPartner;
  readonly link: string;
  /** Link time the partner took while the DP collective was in flight, ms (= the DP stream's delay). */
  readonly sharedMs: number;
  /** How much later the stage's compute ends (the partner's transfers slowed, after what hides them), ms. */
  readonly computeDelayMs: number;
}

/**
 * One layer's TP traffic when the DP × CP collectives share its link:
 *   slowF, slowB  layer time with the TP link at half its bandwidth (both flows active: C/2 each,
 *                 the layer re-scheduled so whatever still hides stays hidden) / alone − 1
 *   uF, uB        TP link time (its collectives' durations, rank 0, without waiting) / layer time:
 *                 the share of a window the TP collectives want the link, i.e. what they take
 *                 from a DP collective running beside them
 */
export interface TpUnderSharing {
  readonly slowF: number;
  readonly slowB: number;
  readonly uF: number;
  readonly uB: number;
}

/** TP link time of rank 0's collectives in one pass of a timeline, ms. */
const tpLinkMs = (t: Timeline, phase: 'forward' | 'backward'): number =>
  t.events.reduce(
    (a, e) => a + (e.rank === 0 && e.kind === 'collective' && e.phase === phase ? e.t1 - e.t0 - e.waitMs : 0),
    0,
  );

/** What tpUnderSharing reads of a layer's pricing (step/layer-pricing.ts's LayerPricing). */
export interface PricedBlock {
  readonly block: LayerPlan;
  readonly blockT: Timeline;
  readonly pieces: StagePieces;
}

const tpUnderSharingMemo = new WeakMap<PricedBlock, WeakMap<Machine, TpUnderSharing>>();

/**
 * TpUnderSharing of `pricing`'s layer on `machine` (degrees `d`; `overlap`: the asynchronous
 * collectives the pricing was scheduled with), re-scheduled once per pricing and machine.
 */
export function tpUnderSharing(pricing: PricedBlock, machine: Machine, d: Degrees, overlap: boolean): TpUnderSharing {
  let byMachine = tpUnderSharingMemo.get(pricing);
  if (!byMachine) tpUnderSharingMemo.set(pricing, (byMachine = new WeakMap()));
  let x = byMachine.get(machine);
  if (x) return x;
  const links = machine.placed ?? groupLinks(machine.system, d);
  const half: Machine = { ...machine, placed: { ...links, tp: { ...links.tp, busGBps: links.tp.busGBps / 2 } } };
  const alone = pricing.pieces.layer;
  const halfT = projectLayer(pricing.block, half, overlap);
  const shared = stagePieces(pricing.block, halfT, pricing.block, halfT).layer;
  const ratio = (a: number, b: number): number => (b > 0 ? a / b : 0);
  x = {
    slowF: Math.max(0, ratio(shared.forward.ms, alone.forward.ms) - 1),
    slowB: Math.max(0, ratio(shared.backward.ms, alone.backward.ms) - 1),
    uF: Math.min(1, ratio(tpLinkMs(pricing.blockT, 'forward'), alone.forward.ms)),
    uB: Math.min(1, ratio(tpLinkMs(pricing.blockT, 'backward'), alone.backward.ms)),
  };
  byMachine.set(machine, x);
  return x;
}

/**
 * Machine.placedShared of a placement: for the TP and pipeline kinds, a physical link direction
 * their rings and the DP × CP rings both load (placement-links.ts's per-kind loads), the most
 * loaded first; absent when they cross none in common.
 */
export function placedSharedLinks(
  priced: Readonly<Record<GroupKind, PricedKind>>,
): Partial<Record<SharingPartner, string>> {
  const used = linksUsed(priced);
  const dp = priced.dpCp.load;
  const out: Partial<Record<SharingPartner, string>> = {};
  for (const k of ['tp', 'pp'] as const) {
    let best: { id: string; load: number } | undefined;
    for (const [id, w] of priced[k].load) {
      const both = dp.get(id);
      if (both !== undefined && (!best || w + both > best.load)) best = { id, load: w + both };
    }
    if (best) out[k] = used.get(best.id)!.label;
  }
  return out;
}
