import { hostTensor } from '../../../src/comm/host-tensor.ts';
import { commPrograms } from '../../../src/ranks/comm-programs.ts';
import type { RankContext } from '../../../src/ranks/context.ts';
import { serveRank } from '../../../src/ranks/serve.ts';

/** What allReduceSeries returns: each call's result as it reads after the last call, and the inputs then. */
export interface SeriesReply {
  readonly results: Float32Array[];
  /** Per call: whether the returned tensor wraps the caller's array. */
  readonly wrapsOut: boolean[];
  readonly inputs: Float32Array[];
}

/** The default programs plus a series of host all-reduces whose results are read only after the last call. */
export const seriesPrograms = {
  ...commPrograms,
  /**
   * All-reduces each of `inputs` in turn on host arrays, each result into new memory or (`reuse`)
   * all into one array of the caller's, and reads every result only after the last call.
   */
  allReduceSeries: async (ctx: RankContext, a: { inputs: Float32Array[]; reuse: boolean }): Promise<SeriesReply> => {
    const out = a.reuse ? new Float32Array(a.inputs[0].length) : undefined;
    const ys = [];
    for (const d of a.inputs) ys.push(await ctx.comm.allReduce(hostTensor([d.length], d), 'sum', 'series', out));
    return { results: ys.map((y) => y.data), wrapsOut: ys.map((y) => y.data === out), inputs: a.inputs };
  },
};

serveRank(seriesPrograms);
