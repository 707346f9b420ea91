/** The GEMM tilings an adapter may run; the tuner picks among those it supports. */
export type GemmVariant = 'naive' | 'rb4' | 'tiled' | 'quad8' | 'quad8wide' | 'quad16' | 'staged32';

/**
 * Every variant, cheapest pipeline compile first (SwiftShader, one createComputePipelineAsync each,
 * one run: naive 39 ms, rb4 58, quad8wide 199, quad8 218, quad16 356, staged32 445 (its pack
 * pipeline besides), tiled 1057): the order the tuner tries
 * them in and breaks ties by, since every rank's device compiles each variant it uses. (Kept apart
 * from the WGSL, so that Node scripts can name variants without loading shaders.)
 */
export const byCompileCost: readonly GemmVariant[] = [
  'naive',
  'rb4',
  'quad8wide',
  'quad8',
  'quad16',
  'staged32',
  'tiled',
];
