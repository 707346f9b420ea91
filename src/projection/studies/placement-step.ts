import type { CollectiveOp } from '../../comm/collectives.ts';
import { busFactor } from '../../comm/ring-bytes.ts';
import { bytesPerElement } from '../../accounting/parameters.ts';
import { dtypeBytes } from '../../hardware/dtype.ts';
import { collectiveTimeUs } from '../../hardware/interconnect.ts';
import type { NodeTopology } from '../../hardware/topology.ts';
import { headDim } from '../../parallel/config.ts';
import { degreesOf, microBatchesOf, type Degrees, type TrainingSetup } from '../../megatron/training-setup.ts';
import { projectStep, type StepProjection } from '../step/cluster-projection.ts';
import { stateBytes } from '../links/data-parallel.ts';
import { groupKinds, processGroups, type GroupKind, type Placement } from '../links/placement.ts';
import {
  linksUsed,
  placedLinks,
  priceGroups,
  type PhysicalLink,
  type PlacedMachine,
  type PricedKind,
} from '../links/placement-links.ts';
import { placedSharedLinks } from '../links/link-sharing.ts';
import type { Machine } from '../layer/projected-layer.ts';

/**
 * What one group kind sends per step (per group, the slowest stage's): the calls, their payload
 * S as nccl-tests counts it, the bytes on every ring link Σ busFactor(op, t)·S, the time the
 * calls take on the kind's placed link, and the share of that time the step exposes.
 */
export interface CommVolume {
  readonly kind: GroupKind;
  readonly groupSize: number;
  readonly callsPerStep: number;
  readonly payloadBytesPerStep: number;
  /** Bytes each ring hop carries per step: Σ busFactor(op, t) · S (p2p: S per direction). */
  readonly ringLinkBytesPerStep: number;
  readonly commMsPerStep: number;
  /** exposedByGroup / commMs, in [0, 1] (seed 004 M106's "exposed sensitivity", docs/sources.md). */
  readonly exposedShare: number;
}

/** A physical link's load per step: bytes and calls by group kind, and M106's weight Σ bytes × exposed share. */
export interface LinkLoad {
  readonly link: PhysicalLink;
  readonly bytesPerStep: Readonly<Partial<Record<GroupKind, number>>>;
  readonly callsPerStep: Readonly<Partial<Record<GroupKind, number>>>;
  readonly totalBytesPerStep: number;
  /** Σ_kind bytes × exposed share: the bytes per step the step waits for. */
  readonly exposedBytesPerStep: number;
}

/** A placement's step: the projection on its priced links, each kind's volume, every link's load. */
export interface PlacementStep {
  readonly placement: Placement;
  readonly priced: Readonly<Record<GroupKind, PricedKind>>;
  readonly step: StepProjection;
  readonly volumes: readonly CommVolume[];
  readonly loads: readonly LinkLoad[];
}

/** One collective kind of calls: op, payload S per call, calls per step. */
interface Calls {
  readonly op: CollectiveOp;
  readonly bytes: number;
  readonly calls: number;
}

/**
 * The calls each kind makes per step, from the projection:
 *   TP: the block timeline's collectives (rank 0) × the busiest stage's layers × m;
 *   CP: per layer (cp − 1) K,V sends forward and (cp − 1) K,V + dK,dV backward (context-parallel.ts);
 *   DP × CP: the busiest stage's gradients once (all-reduce; reduce-scatter + all-gather of the
 *   weights with the distributed optimizer), in the projection's buckets;
 *   pipeline: one activation forward and one gradient backward per micro-batch and chunk;
 *   tied embedding: its gradient once.
 */
function callsOf(p: StepProjection): Record<GroupKind, Calls[]> {
  const s = p.setup;
  const d = degreesOf(s);
  const m = microBatchesOf(s);
  const bytes = dtypeBytes[p.machine.dtype];
  const layers = Math.max(...p.split.layers.map((row) => row.reduce((a, n) => a + n, 0)));
  const tpCalls = new Map<CollectiveOp, { bytes: number; calls: number }>();
  for (const e of p.block.events) {
    if (e.rank !== 0 || !e.collective || (e.phase !== 'forward' && e.phase !== 'backward')) continue;
    const c = tpCalls.get(e.collective.op) ?? { bytes: 0, calls: 0 };
    tpCalls.set(e.collective.op, {
      bytes: c.bytes + (e.collective.payloadBytes / bytesPerElement) * bytes,
      calls: c.calls + 1,
    });
  }
  const tp = [...tpCalls].map(([op, c]) => ({ op, bytes: c.bytes / c.calls, calls: c.calls * layers * m }));
  const { s: seq, b, h, heads, groups } = s.sizes;
  const kv = (2 * (seq / d.cp) * b * (groups ?? heads) * headDim(s.sizes) * bytes) / d.tp;
  const cp: Calls[] = d.cp > 1 ? [{ op: 'broadcast', bytes: kv, calls: 3 * (d.cp - 1) * layers * m }] : [];
  const params = Math.max(...p.stageParams);
  const st = stateBytes(p.machine.dtype, false, 1);
  const buckets = Math.max(1, p.dpBuckets);
  const dist = s.distributedOptimizer ?? false;
  const dp: Calls[] =
    d.dp * d.cp > 1
      ? dist
        ? [
            { op: 'reduceScatter', bytes: (params * st.grads) / buckets, calls: buckets },
            { op: 'allGather', bytes: (params * st.weights) / buckets, calls: buckets },
          ]
        : [{ op: 'allReduce', bytes: (params * st.grads) / buckets, calls: buckets }]
      : [];
  const act = ((s.sp && d.tp > 1 ? seq / d.tp : seq) / d.cp) * b * h * bytes;
  const pp: Calls[] = d.pp > 1 ? [{ op: 'broadcast', bytes: act, calls: m * d.vpp }] : [];
  const emb: Calls[] =
    p.embeddingAllReduceMs > 0
      ? [{ op: 'allReduce', bytes: ((s.sizes.vocab ?? 0) * h * st.grads) / d.tp, calls: 1 }]
      : [];
  return { tp, cp, dpCp: dp, pp, embedding: emb };
}

/** Each kind's volume per step on its placed link. */
function volumes(p: StepProjection, priced: Readonly<Record<GroupKind, PricedKind>>): CommVolume[] {
  const calls = callsOf(p);
  const exposed: Record<GroupKind, number> = {
    tp: p.exposedByGroup.tp,
    cp: p.exposedByGroup.cp,
    dpCp: p.exposedByGroup.dp - p.embeddingAllReduceMs,
    pp: p.exposedByGroup.pp,
    embedding: p.embeddingAllReduceMs,
  };
  const system = p.machine.system;
  return groupKinds.flatMap((k) => {
    const size = priced[k].rings[0]?.members.length ?? 1;
    if (size <= 1 || calls[k].length === 0) return [];
    const link = priced[k].link;
    // Point-to-point kinds (CP ring, pipeline) send S per direction per call: one hop of the ring.
    const p2p = k === 'cp' || k === 'pp';
    const ringLinkBytesPerStep = calls[k].reduce(
      (a, c) => a + c.calls * c.bytes * (p2p ? 1 : busFactor(c.op, size)),
      0,
    );
    const commMsPerStep =
      calls[k].reduce(
        (a, c) =>
          a +
          c.calls *
            (system.collectiveBaseUs +
              (p2p ? link.alphaUs + c.bytes / (link.busGBps * 1e3) : collectiveTimeUs(c.op, c.bytes, size, link))),
        0,
      ) / 1e3;
    return [
      {
        kind: k,
        groupSize: size,
        callsPerStep: calls[k].reduce((a, c) => a + c.calls, 0),
        payloadBytesPerStep: calls[k].reduce((a, c) => a + c.calls * c.bytes, 0),
        ringLinkBytesPerStep,
        commMsPerStep,
        exposedShare: commMsPerStep > 0 ? Math.min(1, Math.max(0, exposed[k] / commMsPerStep)) : 0,
      },
    ];
  });
}

/** Per physical link: each kind's ring bytes × the hops it carries (load), and calls. */
function linkLoads(priced: Readonly<Record<GroupKind, PricedKind>>, vols: readonly CommVolume[]): LinkLoad[] {
  const links = linksUsed(priced);
  return [...links.values()]
    .map((link) => {
      const bytesPerStep: Partial<Record<GroupKind, number>> = {};
      const callsPerStep: Partial<Record<GroupKind, number>> = {};
      let total = 0;
      let exposedBytes = 0;
      for (const v of vols) {
        const w = priced[v.kind].load.get(link.id) ?? 0;
        if (w === 0) continue;
        const bytes = w * v.ringLinkBytesPerStep;
        bytesPerStep[v.kind] = bytes;
        callsPerStep[v.kind] = v.callsPerStep;
        total += bytes;
        exposedBytes += bytes * v.exposedShare;
      }
      return { link, bytesPerStep, callsPerStep, totalBytesPerStep: total, exposedBytesPerStep: exposedBytes };
    })
    .filter((l) => l.totalBytesPerStep > 0)
    .sort((a, b) => b.exposedBytesPerStep - a.exposedBytesPerStep || b.totalBytesPerStep - a.totalBytesPerStep);
}

/** The machine of `machine.system` with `node`'s topology, as many nodes as `gpus` fills. */
export function placedMachine(machine: Machine, node: NodeTopology, gpus: number): PlacedMachine {
  if (node.gpus !== machine.system.gpusPerNode)
    throw new Error(
      `the topology has ${node.gpus} GPUs per node, the system ${machine.system.name} ${machine.system.gpusPerNode}: give a topology of the same node.`,
    );
  return { system: machine.system, node, nodes: Math.ceil(gpus / node.gpus) };
}

/**
 * `machine` with every group kind's ring link as `placement` prices it (placement-links.ts: the
 * slowest hop each ring crosses, links shared by the rings of a kind that run at once), for
 * degrees `d` on `gpus` GPUs of nodes of `node`: what projectStep and the page's timeline price
 * their collectives on (Machine.placed).
 */
export function machineOnPlacement(
  machine: Machine,
  node: NodeTopology,
  d: Degrees,
  gpus: number,
  placement: Placement,
): { readonly machine: Machine; readonly priced: Readonly<Record<GroupKind, PricedKind>> } {
  const priced = priceGroups(placedMachine(machine, node, gpus), placement, processGroups(d, placement.order));
  return { machine: { ...machine, placed: placedLinks(priced), placedShared: placedSharedLinks(priced) }, priced };
}

/**
 * The step of `setup` with its ranks placed by `placement` on nodes of `node`: every group kind
 * priced on the links it crosses (placement-links.ts), the projection on those links, each kind's
 * volume per step and every link's load.
 */
export async function placementStep(
  setup: TrainingSetup,
  machine: Machine,
  node: NodeTopology,
  placement: Placement,
): Promise<PlacementStep> {
  const { machine: onIt, priced } = machineOnPlacement(machine, node, degreesOf(setup), setup.gpus, placement);
  const step = await projectStep(setup, onIt);
  const vols = volumes(step, priced);
  return { placement, priced, step, volumes: vols, loads: linkLoads(priced, vols) };
}
