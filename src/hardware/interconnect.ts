import { quoted } from '../core/quote.ts';
import type { CollectiveOp } from '../comm/collectives.ts';
import { busFactor } from '../comm/ring-bytes.ts';
import { fittedFor, type FittedCollective } from './calibrated-rates.ts';
import { ncclNvlsChannels, ncclNvswitchRingChannels } from './nccl-ring-channels.ts';

/**
 * The alpha-beta ring cost model of DESIGN.md.
 *
 * Convention: S = payload bytes as nccl-tests counts them (all-reduce: the buffer; reduce-scatter:
 * its input; all-gather: its output; broadcast: the buffer). B = `busGBps` is the achieved
 * unidirectional bandwidth of one ring link (rank r → r+1), in GB/s = 1e9 B/s. It is chosen so
 * that the model's bus bandwidth (nccl-tests doc/PERFORMANCE.md) equals B for large messages:
 * a ring all-reduce moves 2(t−1)/t·S over every link, so T = 2(t−1)/t·S/B and
 * busBW = (S/T)·2(t−1)/t = B. A measured busbw can therefore be plugged in as B unchanged.
 * α = `alphaUs` is the latency of one ring step (µs); a ring all-reduce has 2(t−1) steps, a
 * reduce-scatter or an all-gather t−1.
 */
export interface Interconnect {
  /** Preset key ("pcie-gen3", …) or "custom". */
  readonly name: string;
  /** What a person reads on the page. */
  readonly label: string;
  /** α: latency per ring step, µs. */
  readonly alphaUs: number;
  /** B: achieved per-link unidirectional bandwidth = large-message bus bandwidth, GB/s (1e9 B/s). */
  readonly busGBps: number;
  /** Where the numbers come from. */
  readonly source: string;
  /** NCCL channels (one CTA on one SM each) a collective on this link runs; absent: overlap-cost.ts's NVLink default. */
  readonly ncclChannels?: number;
  /** α and B fitted per collective and group size to nccl-tests runs on this link (calibrated-rates.ts); they replace alphaUs and busGBps for that collective. */
  readonly fitted?: readonly FittedCollective[];
}

/**
 * α for the presets is an assumption, not a measurement: a few µs per ring step, between NCCL's
 * per-hop ring latency for its LL protocol (NVLink 0.4 µs, PCIe 1.0 µs) and for Simple (5.7 µs),
 * from the hwLat table of NCCL's src/graph/tuning.cc (values differ across NCCL versions).
 */
const alphaNote = 'α assumed (NCCL tuning.cc per-hop ring latency is 0.4–5.7 µs)';

/** Named interconnects: PCIe Gen3 (V100 box of the seeds), NVLink 3 (A100), NVSwitch (H100). */
export const interconnectPresets = {
  /**
   * 8×V100 on PCIe Gen3 x16 (line rate 15.75 GB/s per direction): bus bandwidth ≈ 7.6 GB/s as
   * measured on the seeds' machine — seed 002 (Level 2), M037 and M040 (docs/sources.md): "V100 PCIe 8
   * 卡 bus BW 约 7.6 GB/s". (Seed 001's evidence table gives the throughput/memory results on that box,
   * not the bandwidth itself.)
   */
  'pcie-gen3': {
    name: 'pcie-gen3',
    label: 'PCIe Gen3 x16 (8×V100 box)',
    alphaUs: 3,
    busGBps: 7.6,
    ncclChannels: 2,
    source: `bus bandwidth 7.6 GB/s as measured on an 8×V100 PCIe Gen3 x16 machine; ${alphaNote}`,
  },
  /**
   * A100 NVLink 3: 12 links × 25 GB/s = 300 GB/s per direction (600 GB/s bidirectional, A100
   * datasheet). NCCL's protocol overhead is ~20% of line rate (S. Jeaugey, NVIDIA/nccl-tests#212),
   * giving ≈ 240 GB/s; reported all_reduce busbw on 8×A100 SXM4 is 200–250 GB/s
   * (NVIDIA/nccl-tests#149: ~200; alayanew nccl-tests guide: 230–250).
   */
  'nvlink-a100': {
    name: 'nvlink-a100',
    label: 'NVLink 3 (8×A100 SXM)',
    alphaUs: 1,
    busGBps: 240,
    // NCCL's ring through the six NVSwitches: 24 channels (nccl-ring-channels.ts; no NVLink SHARP before Hopper).
    ncclChannels: ncclNvswitchRingChannels('ampere', 12),
    source: `300 GB/s per direction line rate less ~20% NCCL protocol overhead (nccl-tests#212) ≈ 240 GB/s; measured 200–250 (nccl-tests#149); ${alphaNote}`,
  },
  /**
   * H100 NVLink 4 through NVSwitch: 18 links × 25 GB/s = 450 GB/s per direction. NCCL's
   * maintainer: "450GB/s is the line rate. With the protocol overhead (~20%) NCCL can get an
   * effective NVLink bandwidth of 370GB/s", seen as busbw with NCCL_ALGO=RING or non-all-reduce
   * ops (NVIDIA/nccl-tests#212). NVLink SHARP all-reduce reports ~480 GB/s busbw, which a ring
   * model cannot represent; we model the ring.
   */
  'nvswitch-h100': {
    name: 'nvswitch-h100',
    label: 'NVSwitch, NVLink 4 (8×H100 SXM)',
    alphaUs: 1,
    busGBps: 370,
    // NVLink SHARP's 16 channels, which NCCL runs an all-reduce on here (a ring would take 24: nccl-ring-channels.ts).
    ncclChannels: ncclNvlsChannels,
    source: `450 GB/s per direction line rate, ~370 GB/s effective ring bus bandwidth (nccl-tests#212, NCCL maintainer); ${alphaNote}`,
  },
} as const satisfies Record<string, Interconnect>;

/** A preset's key. */
export type InterconnectName = keyof typeof interconnectPresets;

/** Every preset key, in display order. */
export const interconnectNames = Object.keys(interconnectPresets) as InterconnectName[];

/** A user-defined link: α in µs per ring step (≥ 0), B in GB/s (> 0). Throws on other values. */
export function customInterconnect(alphaUs: number, busGBps: number): Interconnect {
  if (!(Number.isFinite(alphaUs) && alphaUs >= 0))
    throw new Error(`custom interconnect: α (${alphaUs} µs) must be a finite number ≥ 0.`);
  if (!(Number.isFinite(busGBps) && busGBps > 0))
    throw new Error(`custom interconnect: bandwidth (${busGBps} GB/s) must be a finite number > 0.`);
  return {
    name: 'custom',
    label: `custom (α ${alphaUs} µs, ${busGBps} GB/s)`,
    alphaUs,
    busGBps,
    source: 'user-defined',
  };
}

/**
 * Parses the URL/CLI form: a preset key, or "custom:<alphaUs>:<busGBps>" (e.g. "custom:5:25").
 * Throws naming the accepted forms.
 */
export function parseInterconnect(text: string): Interconnect {
  if (Object.hasOwn(interconnectPresets, text)) return interconnectPresets[text as InterconnectName];
  const m = /^custom:([^:]+):([^:]+)$/.exec(text);
  if (m) return customInterconnect(Number(m[1]), Number(m[2]));
  throw new Error(`unknown interconnect ${quoted(text)}: use ${interconnectNames.join(', ')} or custom:<α µs>:<GB/s>.`);
}

/** Seconds → µs for S bytes at B GB/s: S/(B·1e9) s = S/(B·1e3) µs. */
const transferUs = (bytes: number, gbps: number): number => bytes / (gbps * 1e3);

/**
 * Modeled time (µs) of one collective of `payloadBytes` (S) on a ring of t ranks:
 * all-reduce 2(t−1)(α + S/(tB)); reduce-scatter, all-gather (t−1)(α + S/(tB));
 * broadcast (pipelined chain) (t−1)α + S/B; barrier 2(t−1)α (an all-reduce of nothing); a ring
 * exchange (one step of a chunked all-gather: each rank sends S to its neighbour) α + S/B; an even
 * all-to-all (t − 1 exchanges of S/t with the other ranks, one after another over the rank's
 * link) (t−1)(α + S/(tB)), the same bus factor (t−1)/t nccl-tests gives it. t = 1 costs 0. Where
 * the link carries a fit for the op (`fitted`), its α and B are used.
 */
export function collectiveTimeUs(op: CollectiveOp, payloadBytes: number, t: number, link: Interconnect): number {
  if (t <= 1) return 0;
  const fit = fittedFor(link.fitted, op, t);
  const a = fit?.alphaUs ?? link.alphaUs;
  const bw = fit?.busGBps ?? link.busGBps;
  const step = a + transferUs(payloadBytes / t, bw);
  switch (op) {
    case 'allReduce':
      return 2 * (t - 1) * step;
    case 'reduceScatter':
    case 'allGather':
    case 'allToAll':
      return (t - 1) * step;
    case 'broadcast':
      return (t - 1) * a + transferUs(payloadBytes, bw);
    case 'barrier':
      return 2 * (t - 1) * a;
    case 'ringExchange':
      return a + transferUs(payloadBytes, bw);
  }
}

/** Algorithm bandwidth S/T in GB/s for S bytes in `timeUs` µs. */
export function algBandwidthGBps(payloadBytes: number, timeUs: number): number {
  return payloadBytes / (timeUs * 1e3);
}

/** Bus bandwidth (GB/s) per nccl-tests doc/PERFORMANCE.md: algBW × busFactor(op, t); 0 when t = 1 or timeUs = 0. */
export function busBandwidthGBps(op: CollectiveOp, payloadBytes: number, timeUs: number, t: number): number {
  if (t <= 1 || timeUs <= 0) return 0;
  return algBandwidthGBps(payloadBytes, timeUs) * busFactor(op, t);
}
