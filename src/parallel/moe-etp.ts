import { hostTensor, type HostTensor } from '../comm/host-tensor.ts';
import { expertMajorOrder, type EpComm, type EpPlan } from './ep-dispatch.ts';

// Expert tensor parallelism's row movement in the alltoall dispatcher (Megatron-Core core_v0.19.0
// token_dispatcher.py MoEAlltoAllTokenDispatcher.dispatch_postprocess and combine_preprocess,
// tp_group = the expert TP group of etp ranks, which share their EP coordinate and so their local
// experts, each holding f/etp of every local expert's SwiGLU width):
//   after the EP all-to-all each rank holds R_own rows, source-major [q][l];
//   gather_from_sequence_parallel_region over ETP with output_split_sizes R_j: every ETP rank gets
//     all R = Σ_j R_j rows, [j][q][l], then sorted to [l][j][q] for the grouped GEMM;
//   the experts' outputs are partial sums over f (fc2 is row-parallel): reduce_scatter over ETP with
//     input_split_sizes R_j gives each rank its own R_own rows summed over the etp shards.
// The uneven all-gather is an all-to-all sending the rank's rows to every peer; the uneven
// reduce-scatter an all-to-all of each peer's rows, then the etp blocks summed.

/** Where the ETP group's rows sit: every ETP rank's chunks [j][q][l], the expert-major order, local offsets, this rank's rows. */
export interface EtpPlan {
  /** chunks[j·ep + q][l]: rows EP source q sent ETP rank j's local expert l. */
  readonly chunks: readonly (readonly number[])[];
  /** The [j][q] source-major row landing at [l][j][q] row i. */
  readonly order: readonly number[];
  /** Local expert l's rows (over the whole ETP group) are [offsets[l], offsets[l + 1]). */
  readonly offsets: Int32Array;
  /** Rows each ETP rank received from its EP all-to-all [etp]. */
  readonly rows: readonly number[];
}

/** Every ETP rank's EP chunks all-gathered (`moe.etp.chunks`); with etp 1, the EP plan's own. */
export async function etpPlan(etp: EpComm, plan: EpPlan): Promise<EtpPlan> {
  const ep = plan.chunks.length;
  const L = plan.offsets.length - 1;
  const own = plan.chunks.flat();
  const all =
    etp.size === 1
      ? own
      : Array.from((await etp.allGather(hostTensor([1, ep * L], Float32Array.from(own)), 0, 'moe.etp.chunks')).data);
  const chunks = Array.from({ length: etp.size * ep }, (_, s) => all.slice(s * L, (s + 1) * L));
  const offsets = new Int32Array(L + 1);
  for (let l = 0; l < L; l++) offsets[l + 1] = offsets[l]! + chunks.reduce((n, c) => n + c[l]!, 0);
  const rows = Array.from({ length: etp.size }, (_, j) =>
    chunks.slice(j * ep, (j + 1) * ep).reduce((n, c) => n + c.reduce((a, b) => a + b, 0), 0),
  );
  return { chunks, order: expertMajorOrder(chunks), offsets, rows };
}

/** This rank's R_own rows [R_own, h] → the group's [R, h], ETP rank by ETP rank (uneven all-gather). */
export async function etpGatherRows(etp: EpComm, p: EtpPlan, x: HostTensor, tensor: string): Promise<HostTensor> {
  if (etp.size === 1) return x;
  const data = new Float32Array(x.data.length * etp.size);
  for (let j = 0; j < etp.size; j++) data.set(x.data, j * x.data.length);
  const own = p.rows[etp.rank]!;
  return etp.allToAll(
    hostTensor([own * etp.size, x.shape[1]!], data),
    { send: p.rows.map(() => own), recv: p.rows },
    tensor,
  );
}

/** The group's partial rows [R, h] → this rank's R_own rows summed over the ETP group (uneven reduce-scatter). */
export async function etpReduceRows(etp: EpComm, p: EtpPlan, x: HostTensor, tensor: string): Promise<HostTensor> {
  if (etp.size === 1) return x;
  const own = p.rows[etp.rank]!;
  const h = x.shape[1]!;
  const got = await etp.allToAll(x, { send: p.rows, recv: p.rows.map(() => own) }, tensor);
  const sum = new Float32Array(own * h);
  for (let j = 0; j < etp.size; j++) for (let i = 0; i < own * h; i++) sum[i] = sum[i]! + got.data[j * own * h + i]!;
  return hostTensor([own, h], sum);
}

/**
 * ETP rank j's shard of experts [first, first + L) from every expert's fc1 [E, h, 2f] and fc2
 * [E, f, h]: fc1's gate columns [j·f', (j + 1)·f') and up columns f + the same (column parallel),
 * fc2's rows [j·f', (j + 1)·f') (row parallel), f' = f/etp: fc1 [L, h, 2f'] (gate then up), fc2 [L, f', h].
 */
export function etpExpertShard(
  w: { readonly fc1: ArrayLike<number>; readonly fc2: ArrayLike<number> },
  h: number,
  f: number,
  first: number,
  L: number,
  etp: number,
  j: number,
): { fc1: Float64Array; fc2: Float64Array } {
  const fs = f / etp;
  const fc1 = new Float64Array(L * h * 2 * fs);
  const fc2 = new Float64Array(L * fs * h);
  for (let l = 0; l < L; l++) {
    const e = first + l;
    for (let r = 0; r < h; r++)
      for (let c = 0; c < fs; c++) {
        const src = (e * h + r) * 2 * f;
        const dst = (l * h + r) * 2 * fs;
        fc1[dst + c] = w.fc1[src + j * fs + c]!;
        fc1[dst + fs + c] = w.fc1[src + f + j * fs + c]!;
      }
    for (let r = 0; r < fs; r++)
      for (let c = 0; c < h; c++) fc2[(l * fs + r) * h + c] = w.fc2[(e * f + j * fs + r) * h + c]!;
  }
  return { fc1, fc2 };
}
