/**
 * A ring collective's bus bandwidth across nodes falls as the ring spans more nodes: NCCL runs
 * reduce-scatter and all-gather across nodes as rings only (no tree; NVIDIA/nccl issue #1229), and
 * measured on H100 nodes of 8 GPUs the reduce-scatter's bus bandwidth was, from 4 to 128 nodes,
 *
 *   nodes    4    8   16   32   64  128
 *   GB/s   360  345  320  300  280  260      (NVIDIA/nccl issue #1229, 2024-03-16)
 *
 * about 20 GB/s (5.6% of the 4-node figure) less per doubling. The model's network bandwidth
 * (systems.ts, a NIC's achieved rate) stands for a ring of a few nodes; a ring of n nodes runs at
 * ringNodeScale(n) of it: the table's ratio to its 4-node figure, linear in log2(nodes) between
 * its points, 1 at 4 nodes and fewer (no point below), and beyond 128 nodes the last segment's
 * slope continued (no point there; floored at a quarter). Assumed for every collective of a group
 * that crosses nodes (all-reduce and all-gather run the same ring steps); the measurement is one
 * user's, with no message size stated — a calibrated system (nccl-tests fits, calibrated-rates.ts)
 * replaces it.
 */
const measured: readonly (readonly [nodes: number, busGBps: number])[] = [
  [4, 360],
  [8, 345],
  [16, 320],
  [32, 300],
  [64, 280],
  [128, 260],
];

/** The share of a few-node ring's bus bandwidth a ring across `nodes` nodes keeps (table above). */
export function ringNodeScale(nodes: number): number {
  const [first] = measured;
  const base = first![1];
  if (nodes <= first![0]) return 1;
  const x = Math.log2(nodes);
  for (let i = 1; i < measured.length; i++) {
    const [n1, b1] = measured[i]!;
    const [n0, b0] = measured[i - 1]!;
    if (nodes <= n1 || i === measured.length - 1) {
      const slope = (b1 - b0) / (Math.log2(n1) - Math.log2(n0));
      return Math.max(0.25, (b0 + slope * (x - Math.log2(n0))) / base);
    }
  }
  return 1;
}
