/**
 * Host dispatch: what the CPU spends to issue one kernel, and the idle gaps it leaves on the GPU
 * when kernels are shorter than that.
 *
 * Eager PyTorch issues kernels asynchronously: the CPU runs ahead of the GPU and the GPU idles
 * only when the CPU has fallen behind. Along one op sequence (one stream, issue order = plan
 * order), with h_i the host cost of issuing op i and d_i its device time:
 *   issue_i = issue_{i−1} + h_i            (the CPU issues one op after the other)
 *   start_i = max(end_{i−1}, issue_i)      (the GPU cannot start what is not yet issued)
 *   end_i   = start_i + d_i
 *   gap_i   = start_i − end_{i−1}          (idle time the host cost leaves before op i)
 * The layer repeats L times per micro-batch, so the gaps are those of the sequence's steady
 * state: the sequence is run `passes` times back to back and the last pass is reported. Over a
 * long sequence the time tends to max(Σd, Σh): kernels longer than their dispatch let the CPU
 * run ahead and hide it, runs of short kernels expose it (seed 004 M103, docs/sources.md: CUDA graphs
 * pay off when the step is launch-bound, little when large GEMMs and NCCL dominate).
 *
 * CUDA graphs (Megatron --cuda-graph-impl local|transformer_engine, formerly
 * --enable-cuda-graph) replay the captured kernels with one launch: h_i = 0 inside the graph.
 */
export interface HostDispatchModel {
  /** h: host cost of one eager kernel (Python module + dispatcher + autograd + cudaLaunchKernel), µs. */
  readonly eagerUs: number;
  /** Device-side gap per kernel inside a CUDA graph, µs (kernel-time.ts's launchUs is the eager stream's). */
  readonly graphLaunchUs: number;
  /** Passes over the op sequence before the reported one (steady state). */
  readonly passes: number;
}

/**
 * h = 10 µs: a simple eager PyTorch op costs ~5 µs (no autograd) to ~7 µs (with autograd) of
 * CPU in Python + dispatcher (pytorch/pytorch#41383, measured 2020: 6.8 s per million `2*x`
 * with requires_grad); launching its CUDA kernel adds up to 3.8 µs (NVIDIA's "Getting Started
 * with CUDA Graphs", 2019: back-to-back launches sustain one kernel per 3.8 µs) — 7 + ~3 µs.
 * Graph replay: the same blog times the 2.9 µs kernel at 3.4 µs per kernel inside a graph,
 * 0.5 µs of device-side gap (against 0.9 µs launched from a stream).
 */
export const hostDispatchModel: HostDispatchModel = { eagerUs: 10, graphLaunchUs: 0.5, passes: 3 };

/** One op of the sequence as the dispatch model sees it. */
export interface DispatchedOp {
  /** d: device time (µs) on the compute stream; a collective's transfer time when it blocks the stream. */
  readonly deviceUs: number;
  /** h: host cost of issuing it, µs. */
  readonly hostUs: number;
}

/** The idle gap (µs) host dispatch leaves before each op, in the sequence's steady state (formula above). */
export function dispatchGapsUs(ops: readonly DispatchedOp[], passes: number = hostDispatchModel.passes): number[] {
  let issue = 0;
  let end = 0;
  let gaps: number[] = [];
  for (let p = 0; p < Math.max(1, passes); p++) {
    gaps = [];
    for (const op of ops) {
      issue += op.hostUs;
      const start = Math.max(end, issue);
      gaps.push(start - end);
      end = start + op.deviceUs;
    }
  }
  return gaps;
}
