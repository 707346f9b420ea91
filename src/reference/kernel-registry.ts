import { adamShader } from './adam.ts';
import { addInPlaceKernel, addKernel } from './add.ts';
import { copyColsKernel } from './copy-cols.ts';
import {
  ceGradKernel,
  ceLocalMaxKernel,
  ceLocalSumExpKernel,
  ceLossKernel,
  ceTargetLogitKernel,
} from './cross-entropy.ts';
import { embeddingBackwardKernel, embeddingKernel } from './embedding.ts';
import type { KernelSpec, ShaderSpec } from './kernel-spec.ts';
import { moeGroupedGemmKernel, moeGroupedGemmWgradKernel } from './moe/grouped-gemm.ts';
import { moeCombineProbGradKernel, moePermuteKernel, moeUnpermuteKernel } from './moe/permute.ts';
import { moeAuxLossKernel, moeZLossKernel } from './moe/router-loss.ts';
import { moeNormalizeRowsKernel, moeSigmoidKernel } from './moe/scores.ts';
import { moeTopkKernel } from './moe/topk.ts';
import { scaleKernel } from './scale.ts';
import { rmsnormBackwardKernel, rmsnormKernel, rmsnormWeightGradKernel } from './rmsnorm.ts';
import { ropeBackwardKernel, ropeKernel } from './rope.ts';
import { softmaxBackwardKernel, softmaxKernel } from './softmax.ts';
import { swigluBackwardKernel, swigluKernel } from './swiglu.ts';

/**
 * Every compute kernel other than GEMM that a rank's step runs, by name (Backend.kernel runs it
 * from its descriptor): the descriptor holds the shader, uniform fields, bindings, twin, FLOPs,
 * Megatron module and, for grid kernels, the grid and Params. A kernel is registered by one line
 * here; one with its own grid also gets its GPU dispatch in src/kernels/gpu-kernels.ts.
 */
export const kernelSpecs = {
  rmsnorm: rmsnormKernel,
  rmsnormBackward: rmsnormBackwardKernel,
  rmsnormWeightGrad: rmsnormWeightGradKernel,
  rope: ropeKernel,
  ropeBackward: ropeBackwardKernel,
  softmax: softmaxKernel,
  softmaxBackward: softmaxBackwardKernel,
  swiglu: swigluKernel,
  swigluBackward: swigluBackwardKernel,
  add: addKernel,
  addInPlace: addInPlaceKernel,
  copyCols: copyColsKernel,
  scale: scaleKernel,
  embedding: embeddingKernel,
  embeddingBackward: embeddingBackwardKernel,
  ceLocalMax: ceLocalMaxKernel,
  ceLocalSumExp: ceLocalSumExpKernel,
  ceTargetLogit: ceTargetLogitKernel,
  ceGrad: ceGradKernel,
  ceLoss: ceLossKernel,
  moeTopk: moeTopkKernel,
  moePermute: moePermuteKernel,
  moeUnpermute: moeUnpermuteKernel,
  moeCombineProbGrad: moeCombineProbGradKernel,
  moeGroupedGemm: moeGroupedGemmKernel,
  moeGroupedGemmWgrad: moeGroupedGemmWgradKernel,
  moeZLoss: moeZLossKernel,
  moeAuxLoss: moeAuxLossKernel,
  moeSigmoid: moeSigmoidKernel,
  moeNormalizeRows: moeNormalizeRowsKernel,
} as const satisfies Readonly<Record<string, KernelSpec>>;

/** A non-GEMM compute kernel's name (a key of kernelSpecs). */
export type KernelName = keyof typeof kernelSpecs;

/** Every WGSL shader with a uniform Params struct whose layout a descriptor states (the GEMM shaders aside). */
export const shaderSpecs: readonly ShaderSpec[] = [
  ...new Set<ShaderSpec>([...Object.values(kernelSpecs).map((k) => k.shader), adamShader]),
];
