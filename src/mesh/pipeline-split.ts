/**
 * How Megatron-Core places L transformer layers on p pipeline stages × v virtual stages
 * (megatron/core/transformer/transformer_block.py get_num_layers_to_build, core_v0.19.0):
 * evenly, L/p per stage, unless --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers
 * fix the first / last stage's count and the middle p − 2 stages split the rest evenly; each
 * stage's layers split evenly over its v model chunks (chunk c of stage i is virtual stage c·p + i).
 * The embedding sits on the first virtual stage (stage 0, chunk 0), the output layer and the loss
 * on the last (stage p − 1, chunk v − 1).
 */
export interface PipelineSplit {
  readonly p: number;
  readonly v: number;
  /** layers[i][c]: transformer layers of chunk c on stage i. */
  readonly layers: readonly (readonly number[])[];
}

/** Options of the split (Megatron's uneven first/last stage). */
export interface SplitOptions {
  readonly first?: number;
  readonly last?: number;
}

/** The split of `L` layers over `p` stages × `v` chunks; throws naming the divisibility Megatron asserts. */
export function splitLayers(L: number, p: number, v: number, o: SplitOptions = {}): PipelineSplit {
  const uneven = o.first !== undefined || o.last !== undefined;
  if (uneven && p === 1) throw new Error('--decoder-first/last-pipeline-num-layers need --pp ≥ 2.');
  for (const [flag, n] of [
    ['first', o.first],
    ['last', o.last],
  ] as const)
    if (n !== undefined && !(Number.isInteger(n) && n > 0))
      throw new Error(
        `--decoder-${flag}-pipeline-num-layers must be a whole number larger than 0 (got ${n}; Megatron refuses it: "num_layers_in_${flag}_pipeline_stage must be larger than 0", transformer_config.py:1996-2017).`,
      );
  const perStage: number[] = [];
  if (!uneven) {
    if (L % p !== 0)
      throw new Error(
        `the layers (${L}) must divide evenly over p = ${p} stages, or set --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers.`,
      );
    for (let i = 0; i < p; i++) perStage.push(L / p);
  } else {
    // transformer_config.py:2033-2038 (core_v0.19.0): there are middle layers exactly when there are middle stages.
    const rest = L - (o.first ?? 0) - (o.last ?? 0);
    const middle = p - (o.first !== undefined ? 1 : 0) - (o.last !== undefined ? 1 : 0);
    if (rest < 0) throw new Error(`the first and last stages' layers exceed the model's ${L} layers.`);
    if (middle > 0 && rest === 0)
      throw new Error(
        `the ${middle} middle stages would hold no layers: Megatron refuses it ("Mismatch: 0 middle layers remaining but ${middle} middle PP stages available", transformer_config.py); give the end stages fewer layers or lower p.`,
      );
    if (middle > 0 && rest % middle !== 0)
      throw new Error(
        `with uneven stages the remaining ${rest} layers must divide evenly over the ${middle} other stages (Megatron asserts it).`,
      );
    if (middle === 0 && rest !== 0) throw new Error(`the first and last stages must hold all ${L} layers when p = 2.`);
    const each = middle > 0 ? rest / middle : 0;
    for (let i = 0; i < p; i++) {
      if (i === 0 && o.first !== undefined) perStage.push(o.first);
      else if (i === p - 1 && o.last !== undefined) perStage.push(o.last);
      else perStage.push(each);
    }
  }
  const layers = perStage.map((n, i) => {
    if (n % v !== 0) throw new Error(`stage ${i}'s ${n} layers must divide evenly over its v = ${v} virtual stages.`);
    return Array.from({ length: v }, () => n / v);
  });
  return { p, v, layers };
}

/** True for the chunk that holds the embedding (the first virtual stage). */
export const holdsEmbedding = (stage: number, chunk: number): boolean => stage === 0 && chunk === 0;

/** True for the chunk that holds the output layer and the loss (the last virtual stage). */
export const holdsOutput = (split: PipelineSplit, stage: number, chunk: number): boolean =>
  stage === split.p - 1 && chunk === split.v - 1;
