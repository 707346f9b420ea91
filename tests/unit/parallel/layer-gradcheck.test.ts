import { describe, expect, test } from 'vitest';
import { soloCollectives } from '../../../src/comm/solo.ts';
import { CpuBackend, float64Alloc, type Float64Tensor } from '../../../src/parallel/backend-cpu.ts';
import { configFromPreset, type LayerConfig } from '../../../src/parallel/config.ts';
import { LayerComm } from '../../../src/parallel/layer-comm.ts';
import { layerStep, type StepInputs } from '../../../src/parallel/layer.ts';
import { rankOwnership } from '../../../src/parallel/ownership.ts';
import { rankWeightArrays, stepInputs } from '../../../src/parallel/step-data.ts';
import type { WeightName } from '../../../src/parallel/weight-names.ts';
import { weightsOf, type WeightSet } from '../../../src/parallel/weights.ts';
import { randomArray } from '../../../src/reference/random.ts';

/*
 * The whole layer's backward against float64 directional finite differences of its scalar loss,
 * at t = 1 on the CPU twins with float64 storage between ops (so the check sees the math, not
 * float32 rounding). Scalar: the mean token loss with a vocabulary (what the backward
 * differentiates: dlogits = (softmax − onehot)/(s·b)); without one, L = Σ y·dy for the seeded
 * upstream gradient dy. For each parameter P (and the input x without a vocabulary) a random
 * direction D: (L(θ + hD) − L(θ − hD)) / 2h must equal Σ D ⊙ ∂L/∂P as the layer returns it.
 * Central differences err by O(h²·L''') ≈ 1e-8 relative at h = 1e-4 for these O(1) functions,
 * rounding by O(ε₆₄·|L|/h) ≈ 1e-12; the tolerance 1e-6·max(1, |Σ|D|·|G||) leaves a wide margin
 * yet is 10⁵× below an O(1) error of any gradient (errors seen here: ≤ 3e-8 absolute).
 */

/** t = 1 issues no collective: any call is a bug in the layer. */
const single = soloCollectives<Float64Tensor>();

type Params = Partial<Record<WeightName, Float64Array>>;

interface Step {
  readonly loss: number;
  readonly grads: Params;
  readonly dx?: Float64Array;
}

async function step(c: LayerConfig, params: Params, inputs: StepInputs): Promise<Step> {
  const be = new CpuBackend(float64Alloc);
  const own = rankOwnership(c)[0];
  const shapes = rankWeightArrays(c, own);
  const w: WeightSet<Float64Tensor> = {};
  for (const name of weightsOf(c)) w[name] = float64Alloc(shapes[name]!.shape, params[name]);
  const r = await layerStep(be, new LayerComm(single, (t: Float64Tensor) => t.shape), c, own, w, inputs);
  let loss = 0;
  if (c.vocab > 0) for (const v of r.loss!.data) loss += v / (c.s * c.b);
  else r.y.data.forEach((v, i) => (loss += v * inputs.dy![i]));
  const grads: Params = {};
  for (const name of weightsOf(c)) grads[name] = r.grads[name]!.data;
  return { loss, grads, dx: r.dx?.data };
}

const dot = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
};
const along = (x: Float64Array, d: Float64Array, h: number): Float64Array => x.map((v, i) => v + h * d[i]);

const configs: [string, LayerConfig][] = [
  ['classroom: GQA 4 heads / 2 groups, vocab 32', configFromPreset('classroom', { tp: 1 })],
  [
    'MHA without vocabulary, batch 2',
    configFromPreset('classroom', { s: 6, b: 2, h: 16, heads: 4, groups: 4, ffn: 24, vocab: 0, tp: 1 }),
  ],
  [
    'MHA with vocabulary 19',
    configFromPreset('classroom', { s: 5, b: 1, h: 12, heads: 3, groups: 3, ffn: 20, vocab: 19, tp: 1 }),
  ],
  [
    'GQA without vocabulary',
    configFromPreset('classroom', { s: 6, b: 1, h: 16, heads: 4, groups: 2, ffn: 24, vocab: 0, tp: 1 }),
  ],
  [
    'MQA with vocabulary 17, batch 2',
    configFromPreset('classroom', { s: 4, b: 2, h: 12, heads: 3, groups: 1, ffn: 20, vocab: 17, tp: 1 }),
  ],
  [
    'MQA without vocabulary',
    configFromPreset('classroom', { s: 5, b: 1, h: 16, heads: 4, groups: 1, ffn: 16, vocab: 0, tp: 1 }),
  ],
];

/** (L(+h) − L(−h)) / 2h along `d` against Σ d ⊙ analytic; a message when they disagree. */
async function directional(
  what: string,
  d: Float64Array,
  analytic: Float64Array,
  lossAt: (h: number) => Promise<number>,
): Promise<string | undefined> {
  const h = 1e-4;
  const fd = ((await lossAt(h)) - (await lossAt(-h))) / (2 * h);
  const want = dot(d, analytic);
  const scale = Math.max(1, dot(d.map(Math.abs), analytic.map(Math.abs)));
  const err = Math.abs(fd - want);
  return err <= 1e-6 * scale
    ? undefined
    : `${what}: finite difference ${fd}, layer ${want} (error ${err.toExponential(2)}, scale ${scale.toExponential(2)})`;
}

describe('the whole layer’s gradients against float64 directional finite differences (t = 1, CPU twins)', () => {
  test.each(configs)('%s: every parameter and the input', async (_, c) => {
    const seeded = stepInputs(c);
    const inputs: StepInputs =
      c.vocab > 0 ? seeded : { x: Float64Array.from(seeded.x!), dy: Float64Array.from(seeded.dy!) };
    const shards = rankWeightArrays(c, rankOwnership(c)[0]);
    const theta: Params = {};
    for (const name of weightsOf(c)) theta[name] = Float64Array.from(shards[name]!.data);
    const base = await step(c, theta, inputs);
    const direction = (n: number, k: number): Float64Array => Float64Array.from(randomArray(n, 7919 + k));
    const failures: (string | undefined)[] = [];
    for (const [k, name] of weightsOf(c).entries()) {
      const d = direction(theta[name]!.length, k);
      const lossAt = async (h: number) => (await step(c, { ...theta, [name]: along(theta[name]!, d, h) }, inputs)).loss;
      failures.push(await directional(`d${name}`, d, base.grads[name]!, lossAt));
    }
    if (c.vocab === 0) {
      const x = inputs.x as Float64Array;
      const d = direction(x.length, 99);
      const lossAt = async (h: number) => (await step(c, theta, { ...inputs, x: along(x, d, h) })).loss;
      failures.push(await directional('dx', d, base.dx!, lossAt));
    }
    const report = failures.filter((f) => f !== undefined);
    expect(report, report.join('\n')).toEqual([]);
    expect(failures.length).toBe(weightsOf(c).length + (c.vocab === 0 ? 1 : 0));
  });
});
