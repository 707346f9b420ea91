import subgroup from '../../shaders/gemm-subgroup.wgsl?raw';
import pack from '../../shaders/gemm-pack.wgsl?raw';

import { byCompileCost, type GemmVariant } from './gemm-variant-names.ts';
import { shaderFile } from './shader-source.ts';
import type { GemmProblem } from '../reference/gemm.ts';

/** gemm.wgsl after the snippet its gemm_rb4 calls (shaders/rb4-tile.wgsl; WGSL has no #include). */
const portable = ['rb4-tile', 'gemm'].map(shaderFile).join('\n');

export { byCompileCost, type GemmVariant };

/** How one variant is compiled and dispatched: C elements per workgroup (rows × cols). */
export interface GemmVariantSpec {
  readonly name: GemmVariant;
  readonly label: string;
  readonly code: string;
  readonly entryPoint: string;
  readonly constants: Record<string, number>;
  readonly tileM: number;
  readonly tileN: number;
  readonly needsSubgroups: boolean;
  readonly summary: string;
  /**
   * Staged variants read A and B from rgba32float textures that gemm-pack.wgsl fills first (two
   * more passes per GEMM); a problem whose textures would exceed the device's limits runs
   * `fallback` instead (see stagingRefusal). `pack` is gemm-pack.wgsl's code.
   */
  readonly staged?: { readonly fallback: GemmVariant; readonly pack: string };
  /**
   * The epilogue is specialised per problem by the pipeline constants ACCUMULATE and EDGE
   * (gemm-subgroup.wgsl; see pipelineConstants); otherwise accumulate is a runtime flag.
   */
  readonly specialisedEpilogue: boolean;
}

const spec = (s: GemmVariantSpec): GemmVariantSpec => s;

/** Every variant, by name. */
export const gemmVariants: Record<GemmVariant, GemmVariantSpec> = {
  naive: spec({
    name: 'naive',
    label: 'gemm',
    code: portable,
    entryPoint: 'gemm_naive',
    constants: {},
    tileM: 8,
    tileN: 8,
    needsSubgroups: false,
    specialisedEpilogue: false,
    summary: 'one invocation per output (baseline)',
  }),
  rb4: spec({
    name: 'rb4',
    label: 'gemm',
    code: portable,
    entryPoint: 'gemm_rb4',
    constants: { RX: 16, RY: 4 },
    tileM: 16,
    tileN: 64,
    needsSubgroups: false,
    specialisedEpilogue: false,
    summary: '4×4 outputs per invocation in registers',
  }),
  tiled: spec({
    name: 'tiled',
    label: 'gemm',
    code: portable,
    entryPoint: 'gemm_tiled',
    constants: {},
    tileM: 64,
    tileN: 64,
    needsSubgroups: false,
    specialisedEpilogue: false,
    summary: '64×64 tile staged through workgroup memory',
  }),
  quad8: spec({
    name: 'quad8',
    label: 'gemm-subgroup',
    code: subgroup,
    entryPoint: 'gemm_quad8',
    constants: { QX: 2 },
    tileM: 64,
    tileN: 64,
    needsSubgroups: true,
    specialisedEpilogue: true,
    summary: '8×8 per lane, A rows shared across a quad',
  }),
  quad8wide: spec({
    name: 'quad8wide',
    label: 'gemm-subgroup',
    code: subgroup,
    entryPoint: 'gemm_quad8',
    constants: { QX: 8 },
    tileM: 16,
    tileN: 256,
    needsSubgroups: true,
    specialisedEpilogue: true,
    summary: '8×8 per lane, 16×256 tile for small M',
  }),
  quad16: spec({
    name: 'quad16',
    label: 'gemm-subgroup',
    code: subgroup,
    entryPoint: 'gemm_quad16',
    constants: { QX: 2 },
    tileM: 128,
    tileN: 64,
    needsSubgroups: true,
    specialisedEpilogue: true,
    summary: '16×8 per lane, A rows shared across a quad',
  }),
  staged32: spec({
    name: 'staged32',
    label: 'gemm-subgroup',
    code: subgroup,
    entryPoint: 'gemm_staged32',
    // 8 quads (32 lanes): a 64 × 128 tile, so that square 256 makes 8 workgroups, not 4 (SwiftShader
    // spreads workgroups over its threads: 4 on 2 cores left one thread's hiccup unshared). Same run,
    // 256³ on 2 cores: 4.38 GFLOP/s against 3.84 with 16 quads (128 × 128); 512³ and the MLP shards within noise.
    constants: { QX: 4, QUADS: 8 },
    tileM: 64,
    tileN: 128,
    needsSubgroups: true,
    specialisedEpilogue: true,
    summary: '32×8 per lane, 8 k per step, A and B staged in textures',
    staged: { fallback: 'quad16', pack },
  }),
};

/**
 * The pipeline constants `v` runs problem `p` with: its own, and for a specialised epilogue
 * ACCUMULATE (p.accumulate) and EDGE (1 unless tiles of tileM × tileN cover M × N exactly).
 */
export function pipelineConstants(v: GemmVariantSpec, p: GemmProblem): Record<string, number> {
  if (!v.specialisedEpilogue) return v.constants;
  const edge = p.M % v.tileM !== 0 || p.N % v.tileN !== 0;
  return { ...v.constants, ACCUMULATE: p.accumulate ? 1 : 0, EDGE: edge ? 1 : 0 };
}

/** Variants this device can compile, cheapest compile first: the subgroup ones only with the `subgroups` feature. */
export function supportedGemmVariants(device: GPUDevice): GemmVariant[] {
  const sub = device.features.has('subgroups');
  return byCompileCost.filter((v) => sub || !gemmVariants[v].needsSubgroups);
}
