import { describe, expect, test } from 'vitest';
import type { HostTensor } from '../../../src/comm/host-tensor.ts';
import { createInProcessGroup } from '../../../src/comm/in-process.ts';
import { CpuBackend } from '../../../src/parallel/backend-cpu.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { localDims } from '../../../src/parallel/dims.ts';
import { LayerComm } from '../../../src/parallel/layer-comm.ts';
import { mlpBlockBackward, mlpBlockForward, type MlpBlockLabels } from '../../../src/parallel/mlp-block.ts';
import { rankOwnership } from '../../../src/parallel/ownership.ts';
import { oracleTolerance } from '../../../src/parallel/oracle.ts';
import { rankWeightArrays } from '../../../src/parallel/step-data.ts';
import { randomArray } from '../../../src/reference/random.ts';

// The one tensor-parallel MLP block in its two uses: the layer's (frees the gathered input under
// SP and re-gathers it for wgrad) and the classroom's (keeps it, reads the partial sums). Both run
// here on the CPU twins with the in-process collectives.

const layerLabels: MlpBlockLabels = {
  gather: 'in',
  reduce: 'out',
  reduceBackward: 'out.grad',
  regather: 'in.again',
  dgradReduce: 'in.grad',
};
const { regather: _, ...keptLabels } = layerLabels;

async function runBlock(sp: boolean, labels: MlpBlockLabels) {
  const c = configFromPreset('classroom', { tp: 2, sp });
  const D = localDims(c);
  const group = createInProcessGroup(c.tp);
  const n = c.s * c.b * c.h;
  const x = randomArray(n, 11);
  const dy = randomArray(n, 12);
  return Promise.all(
    rankOwnership(c).map(async (own) => {
      const be = new CpuBackend();
      const lc = new LayerComm(group[own.rank], (t: HostTensor) => t.shape);
      const shards = rankWeightArrays(c, own);
      const w = {
        wfc1: be.tensor('wfc1', shards.wfc1!.shape, shards.wfc1!.data),
        wdown: be.tensor('wdown', shards.wdown!.shape, shards.wdown!.data),
      };
      const dw = { wfc1: be.tensor('dwfc1', shards.wfc1!.shape), wdown: be.tensor('dwdown', shards.wdown!.shape) };
      const row = c.b * c.h;
      const mine = (a: Float32Array) => a.slice(own.tokens[0] * row, own.tokens[1] * row);
      const sl = own.tokens[1] - own.tokens[0];
      const read = (t: HostTensor) => be.read(t);
      const fwd = await mlpBlockForward(be, lc, D, sp, be.tensor('x', [sl, c.b, c.h], mine(x)), w, labels, read);
      be.phase = lc.phase = 'backward';
      const dyT = be.tensor('dy', [sl, c.b, c.h], mine(dy));
      const bwd = await mlpBlockBackward(be, lc, D, sp, dyT, fwd.saved, w, dw, labels, read);
      return {
        c,
        out: await read(fwd.out),
        zPartial: fwd.partial!,
        dx: await read(bwd.dx),
        dwfc1: await read(dw.wfc1),
        dwdown: await read(dw.wdown),
        log: lc.log.map((k) => [k.name, k.async] as const),
      };
    }),
  );
}

describe('the tensor-parallel MLP block (classroom, t = 2)', () => {
  test.each([false, true])(
    'SP %s: keeping the gathered input or re-gathering it gives the same output, dX and weight gradients',
    async (sp) => {
      const a = await runBlock(sp, layerLabels);
      const b = await runBlock(sp, keptLabels);
      for (const r of [0, 1]) {
        // The same ops on the same values in the same order: identical float32 results.
        for (const k of ['out', 'dx', 'dwfc1', 'dwdown'] as const) expect(b[r][k], `rank ${r} ${k}`).toEqual(a[r][k]);
      }
      const names = (log: readonly (readonly [string, boolean])[]) => log.map(([n]) => n);
      expect(names(a[0].log)).toEqual(sp ? ['in', 'out', 'out.grad', 'in.again', 'in.grad'] : ['out', 'in.grad']);
      expect(names(b[0].log)).toEqual(sp ? ['in', 'out', 'out.grad', 'in.grad'] : ['out', 'in.grad']);
      // f's backward reduction is asynchronous (under the wgrad GEMMs) in both.
      expect(a[0].log.at(-1)).toEqual(['in.grad', true]);
      expect(b[0].log.at(-1)).toEqual(['in.grad', true]);
    },
  );

  test('the partial sums shown before g add up to its result (tolerance: the oracle’s, another summation order)', async () => {
    const [r0, r1] = await runBlock(false, keptLabels);
    const sum = r0.zPartial.map((v, i) => v + r1.zPartial[i]);
    const max = r0.out.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    const err = sum.reduce((m, v, i) => Math.max(m, Math.abs(v - r0.out[i])), 0);
    expect(err).toBeLessThanOrEqual(oracleTolerance(r0.c, max));
    // A partial alone is not the result.
    expect(r0.zPartial.reduce((m, v, i) => Math.max(m, Math.abs(v - r0.out[i])), 0)).toBeGreaterThan(100 * err);
  });
});
