// The page's kernel switches as the projection's KernelOptions (pure): one mapping for the cluster panel and the advisor.
import { defaultKernelOptions, type KernelOptions } from '../../projection/layer/kernel-options.ts';
import type { Settings } from './state.ts';

/** The settings that choose the kernels of every projected row. */
export type KernelSwitches = Pick<
  Settings,
  'layerArch' | 'attn' | 'fp8' | 'fp8recipe' | 'fp4' | 'graphs' | 'ce' | 'gscope'
>;

/** `k` over the projection's defaults: the fp8 recipe only with fp8, the graph scope only when partial. */
export const kernelOptionsOf = (k: KernelSwitches): KernelOptions => ({
  ...defaultKernelOptions,
  layerArch: k.layerArch,
  attentionBackend: k.attn,
  fp8: k.fp8,
  ...(k.fp8 !== 'none' && { fp8Recipe: k.fp8recipe }),
  ...(k.fp4 !== 'none' && { fp4: k.fp4 }),
  cudaGraphImpl: k.graphs,
  ...(k.ce !== 'plan' && { crossEntropy: k.ce }),
  ...(k.gscope.length > 0 && { cudaGraphModules: k.gscope }),
});
