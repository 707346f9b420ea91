/**
 * The layer architecture a model is built from (what `--arch` selects in the CLI and the page):
 *   llama  Megatron's --swiglu --normalization RMSNorm --position-embedding-type rope
 *          --disable-bias-linear: gated SiLU MLP, three GEMMs (gate and up [h, ffn], down [ffn, h]);
 *          the playground's own layer (src/parallel/plan.ts).
 *   gpt    Megatron's defaults: GeLU MLP of two GEMMs (fc1 [h, ffn], fc2 [ffn, h]), LayerNorm,
 *          learned absolute positions, biases.
 * Not the GPU's architecture (`Gpu.arch`: volta … blackwell) nor the compute capability
 * (`MegatronEnvironment.computeCapability`).
 */
export const layerArchs = ['llama', 'gpt'] as const;
/** A layer architecture (`layerArchs`). */
export type LayerArch = (typeof layerArchs)[number];

/** How a projection names the layer it priced, with the flag that chose it. */
export const layerArchText = (arch: LayerArch): string =>
  arch === 'gpt' ? 'the GPT layer (no --swiglu)' : 'the Llama layer (--swiglu)';
