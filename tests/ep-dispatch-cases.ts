// The routed tokens the alltoall token dispatcher is checked on, in Node (tests/unit/parallel) and
// on rank workers (tests/gpu/ranks), and what a single process makes of them.
import { hostTensor, type HostTensor } from '../src/comm/host-tensor.ts';
import type { EpDispatchInput } from '../src/parallel/ep-dispatch.ts';
import { randomArray, rng } from '../src/reference/random.ts';

/** EP rank q's T tokens of width h and a router skewed toward expert 0 (some experts get none): top-k distinct experts per token. */
export function routedTokens(
  q: number,
  T: number,
  h: number,
  E: number,
  k: number,
): EpDispatchInput & { x: HostTensor } {
  const rand = rng(31 * q + 7);
  const topIdx: number[] = [];
  const topProb: number[] = [];
  for (let t = 0; t < T; t++) {
    const picks = new Set<number>();
    while (picks.size < k) picks.add(rand() < 0.4 ? 0 : Math.floor(rand() * rand() * E));
    for (const e of picks) {
      topIdx.push(e);
      topProb.push(0.25 + rand() / 2);
    }
  }
  return { experts: E, topk: k, x: hostTensor([T, h], randomArray(T * h, 100 + q)), topIdx, topProb };
}

/** The single-process gather: expert e's rows are, EP rank by rank and token by token, every token routed to e. */
export function gatheredRows(inputs: readonly (EpDispatchInput & { x: HostTensor })[], e: number): number[] {
  const rows: number[] = [];
  for (const { x, topIdx, topk: k } of inputs) {
    const h = x.shape[1]!;
    for (let i = 0; i < topIdx.length; i++)
      if (topIdx[i] === e) rows.push(...x.data.subarray(Math.floor(i / k) * h, (Math.floor(i / k) + 1) * h));
  }
  return rows;
}

/** Token t's combined output under the stand-in experts (scaleByExpert), in float64: Σ_j w_{t,j}·(e_{t,j} + 1)·x_t. */
export function combinedOutput(input: EpDispatchInput & { x: HostTensor }): Float64Array {
  const { x, topIdx, topProb, topk: k } = input;
  const [T, h] = [x.shape[0]!, x.shape[1]!];
  const y = new Float64Array(T * h);
  for (let i = 0; i < T * k; i++)
    for (let c = 0; c < h; c++)
      y[Math.floor(i / k) * h + c] += topProb[i]! * (topIdx[i]! + 1) * x.data[Math.floor(i / k) * h + c]!;
  return y;
}

/** Float32 rounding of each scaled row (terms ≤ 9 in size) and of k ≤ 2 additions stays below this. */
export const combineTolerance = 1e-5;
