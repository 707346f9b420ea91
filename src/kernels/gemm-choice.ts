import type { GemmVariant } from './gemm-variants.ts';
import type { GemmProblem } from '../reference/gemm.ts';

// Choices per adapter and shape class. Module state is per JS realm, so each rank worker tunes
// for itself; the adapter key keeps two adapters in one realm apart.
export const gemmChoices = new Map<string, GemmVariant>();

/** Names the adapter behind a device (vendor, architecture, device, description). */
export function adapterKey(device: GPUDevice): string {
  const i = device.adapterInfo;
  return [i.vendor, i.architecture, i.device, i.description].join('/');
}

const bucket = (d: number): string => (d <= 1 ? '1' : d <= 16 ? 's' : d <= 128 ? 'm' : String(Math.ceil(Math.log2(d))));

/**
 * Shape class of a problem: size buckets of M, N, K (1, ≤16, ≤128, then one per power of two:
 * "10" = 513…1024) and whether each operand's k runs contiguously. Problems in one class share a
 * tiling: above 128 a class spans at most 2× per dim, so the tiling timed on its first problem
 * stands for the rest (one coarse "large" class let 256³ decide for 512×4096×1024).
 */
export function gemmShapeClass(p: GemmProblem): string {
  return `M${bucket(p.M)}N${bucket(p.N)}K${bucket(p.K)}${p.sAk === 1 ? 'n' : 't'}${p.sBn === 1 ? 'n' : 't'}`;
}

/**
 * Default before tuning: the registers-only kernel, which assumes nothing of the adapter (the
 * subgroup kernels are used only after tuneGemm has verified them on it).
 */
export function defaultGemmVariant(): GemmVariant {
  return 'rb4';
}

/** The variant gemm() runs for `p` on this device: the tuned one, else the default. */
export function chosenGemmVariant(device: GPUDevice, p: GemmProblem): GemmVariant {
  return gemmChoices.get(`${adapterKey(device)}|${gemmShapeClass(p)}`) ?? defaultGemmVariant();
}

/** This adapter's tuned choices (shape class → variant), to hand to other ranks on the same adapter. */
export function exportGemmChoices(device: GPUDevice): [string, GemmVariant][] {
  const prefix = `${adapterKey(device)}|`;
  return [...gemmChoices].filter(([k]) => k.startsWith(prefix)).map(([k, v]) => [k.slice(prefix.length), v]);
}

/** Adopts choices another rank tuned on the same adapter (the variants were verified there). */
export function importGemmChoices(device: GPUDevice, choices: readonly [string, GemmVariant][]): void {
  for (const [cls, v] of choices) gemmChoices.set(`${adapterKey(device)}|${cls}`, v);
}
