import { describe, expect, test } from 'vitest';
import { systemFor, unknownDeviceSystem } from '../../../src/hardware/device-system.ts';
import { systemNames, systems } from '../../../src/hardware/systems.ts';

// CUDA device names as torch.cuda.get_device_name / Kineto's deviceProperties[].name give them.
describe('systemFor: the catalog system of a trace, from its device names', () => {
  test.each([
    ['Tesla V100-PCIE-32GB', 'v100-pcie-8'],
    ['Tesla V100-SXM2-32GB', 'dgx1-v100'],
    ['Tesla V100-SXM3-32GB', 'dgx1-v100'],
    ['NVIDIA A100-SXM4-80GB', 'dgx-a100'],
    ['NVIDIA A100-SXM4-40GB', 'dgx-a100-40gb'],
    ['NVIDIA H100 80GB HBM3', 'dgx-h100'],
    ['NVIDIA H200', 'dgx-h200'],
    ['NVIDIA B200', 'dgx-b200'],
    ['NVIDIA GB200', 'gb200-nvl72'],
  ])('%s → %s', (device, system) => {
    expect(systemFor([device])).toBe(system);
  });

  test('the non-DGX systems of the catalog are reached too: every system whose GPU no earlier system shares', () => {
    const reached = new Set(
      [
        'Tesla V100-PCIE-32GB',
        'Tesla V100-SXM2-32GB',
        'NVIDIA A100-SXM4-80GB',
        'NVIDIA A100-SXM4-40GB',
        'NVIDIA H100 80GB HBM3',
        'NVIDIA H200',
        'NVIDIA B200',
        'NVIDIA GB200',
      ].map((d) => systemFor([d])),
    );
    // dgx2-v100 has DGX-1's GPU: a device name cannot tell them apart, DGX-1 comes first in the catalog.
    const firstOfGpu = systemNames.filter(
      (n, i) => systemNames.findIndex((m) => systems[m].gpu === systems[n].gpu) === i,
    );
    expect([...reached].sort()).toEqual([...firstOfGpu].sort());
    expect(firstOfGpu.filter((n) => !n.startsWith('dgx'))).toEqual(['v100-pcie-8', 'gb200-nvl72']);
  });

  test('a model word counts only whole: "GB200" is no B200, "H1000" no H100', () => {
    expect(systemFor(['NVIDIA GB200'])).not.toBe('dgx-b200');
    expect(systemFor(['Example H1000'])).toBe(unknownDeviceSystem);
  });

  test('a job on one kind of GPU listed by several ranks, with an unknown device beside it, still finds it', () => {
    expect(systemFor(['NVIDIA A100-SXM4-40GB', 'NVIDIA A100-SXM4-40GB', 'Intel Xeon'])).toBe('dgx-a100-40gb');
  });

  test('no device recorded, or a GPU the catalog lacks: the stated fallback', () => {
    expect(systemFor([])).toBe(unknownDeviceSystem);
    expect(systemFor(['AMD Instinct MI300X'])).toBe(unknownDeviceSystem);
    expect(unknownDeviceSystem).toBe('dgx-h100');
  });
});
