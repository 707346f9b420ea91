// The catalog system a measured job ran on, from the CUDA names of its devices (Kineto's
// `deviceProperties[].name`, as torch.cuda.get_device_name gives them): "Tesla V100-PCIE-32GB",
// "Tesla V100-SXM2-32GB", "NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA B200", "NVIDIA GB200".
import type { GpuName } from './gpus.ts';
import { systemNames, systems, type SystemName } from './systems.ts';

/** How a CUDA device name spells a catalog GPU: its model word, and words that tell it from the catalog's other GPUs of that model. */
interface DeviceWords {
  readonly model: string;
  readonly variants: readonly string[];
}

/** Every catalog GPU's words (upper case; a name's words are split at every non-alphanumeric character). */
const deviceWords = {
  'v100-sxm2': { model: 'V100', variants: ['SXM2', 'SXM3'] },
  'v100-pcie': { model: 'V100', variants: ['PCIE'] },
  'a100-sxm-80gb': { model: 'A100', variants: ['80GB'] },
  'a100-sxm-40gb': { model: 'A100', variants: ['40GB'] },
  'h100-sxm': { model: 'H100', variants: [] },
  'h200-sxm': { model: 'H200', variants: [] },
  b200: { model: 'B200', variants: [] },
  'gb200-gpu': { model: 'GB200', variants: [] },
} as const satisfies Record<GpuName, DeviceWords>;

/** The system taken when no device name names a catalog GPU (no devices recorded, or a GPU the catalog lacks). */
export const unknownDeviceSystem: SystemName = 'dgx-h100';

/**
 * The catalog system whose GPU the device names name: the model word must appear as a whole word
 * (so "GB200" is not a B200), and a variant word (PCIE, 40GB, …) counts one more; the highest
 * score wins, ties in catalog order (V100 without a variant → the seeds' V100 PCIe box; an
 * SXM2 V100 → DGX-1). No match: `unknownDeviceSystem`.
 */
export function systemFor(deviceNames: readonly string[]): SystemName {
  const words = new Set(deviceNames.flatMap((d) => d.toUpperCase().split(/[^A-Z0-9]+/)));
  const score = (n: SystemName): number => {
    const w: DeviceWords = deviceWords[systems[n].gpu.name];
    return words.has(w.model) ? 1 + Number(w.variants.some((v) => words.has(v))) : 0;
  };
  let best: SystemName = unknownDeviceSystem;
  let bestScore = 0;
  for (const n of systemNames)
    if (score(n) > bestScore) {
      best = n;
      bestScore = score(n);
    }
  return best;
}
