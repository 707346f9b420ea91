import { describe, expect, test } from 'vitest';
import type { CollectiveOp } from '../../../src/comm/collectives.ts';
import {
  algBandwidthGBps,
  busBandwidthGBps,
  collectiveTimeUs,
  customInterconnect,
  interconnectNames,
  interconnectPresets,
  parseInterconnect,
} from '../../../src/hardware/interconnect.ts';
import { busFactor } from '../../../src/comm/ring-bytes.ts';

const pcie = interconnectPresets['pcie-gen3'];

describe('collectiveTimeUs', () => {
  test('an all-reduce of a gpt2-layer activation (32·768·4 B) at t = 2 on PCIe takes 2(t−1)(α + S/(tB))', () => {
    // S = 98304 B; S/(tB) = 49152 / 7.6e3 µs = 6.4674 µs; 2·1·(3 + 6.4674) = 18.935 µs.
    expect(collectiveTimeUs('allReduce', 98304, 2, pcie)).toBeCloseTo(18.9347, 3);
  });

  test('an all-reduce of 7.6 MB at t = 4 on PCIe takes 1518 µs and its reduce-scatter half 759 µs', () => {
    // step = 3 + 7.6e6/4/7.6e3 = 253 µs; all-reduce 2·3 steps, reduce-scatter and all-gather 3 steps.
    expect(collectiveTimeUs('allReduce', 7.6e6, 4, pcie)).toBeCloseTo(1518, 9);
    expect(collectiveTimeUs('reduceScatter', 7.6e6, 4, pcie)).toBeCloseTo(759, 9);
    expect(collectiveTimeUs('allGather', 7.6e6, 4, pcie)).toBeCloseTo(759, 9);
  });

  test('reduce-scatter plus all-gather costs exactly one all-reduce of the same payload', () => {
    for (const t of [2, 3, 8]) {
      const link = interconnectPresets['nvswitch-h100'];
      expect(collectiveTimeUs('reduceScatter', 1e6, t, link) + collectiveTimeUs('allGather', 1e6, t, link)).toBeCloseTo(
        collectiveTimeUs('allReduce', 1e6, t, link),
        9,
      );
    }
  });

  test('a broadcast is (t−1)α + S/B and a barrier 2(t−1)α', () => {
    const link = customInterconnect(2, 100);
    expect(collectiveTimeUs('broadcast', 1e6, 4, link)).toBeCloseTo(6 + 10, 9);
    expect(collectiveTimeUs('barrier', 0, 4, link)).toBe(12);
  });

  test.each(['allReduce', 'reduceScatter', 'allGather', 'broadcast', 'barrier'] as const)(
    '%s costs nothing at t = 1',
    (op) => {
      expect(collectiveTimeUs(op, 1e9, 1, pcie)).toBe(0);
    },
  );

  test('on NVSwitch the same all-reduce is about 49× faster than on PCIe for large messages', () => {
    const ratio =
      collectiveTimeUs('allReduce', 1e9, 8, pcie) /
      collectiveTimeUs('allReduce', 1e9, 8, interconnectPresets['nvswitch-h100']);
    expect(ratio).toBeCloseTo(370 / 7.6, 0);
  });
});

describe('bus bandwidth', () => {
  test('uses the nccl-tests factors 2(t−1)/t, (t−1)/t, 1', () => {
    expect(busFactor('allReduce', 8)).toBe(1.75);
    expect(busFactor('reduceScatter', 8)).toBe(0.875);
    expect(busFactor('allGather', 4)).toBe(0.75);
    expect(busFactor('broadcast', 8)).toBe(1);
  });

  test('algorithm bandwidth is bytes per µs / 1e3: 1 MB in 100 µs is 10 GB/s', () => {
    expect(algBandwidthGBps(1e6, 100)).toBe(10);
    expect(busBandwidthGBps('allReduce', 1e6, 100, 2)).toBe(10);
    expect(busBandwidthGBps('allReduce', 1e6, 100, 4)).toBe(15);
  });

  test.each([2, 3, 4, 8, 16])(
    'with α = 0 the modeled bus bandwidth equals the link bandwidth B at t = %i (the convention of B)',
    (t) => {
      const link = customInterconnect(0, 123);
      for (const op of ['allReduce', 'reduceScatter', 'allGather', 'broadcast'] as CollectiveOp[]) {
        expect(busBandwidthGBps(op, 5e6, collectiveTimeUs(op, 5e6, t, link), t)).toBeCloseTo(123, 9);
      }
    },
  );

  test('measures below B once α matters (small messages)', () => {
    const t = 8;
    const time = collectiveTimeUs('allReduce', 4096, t, pcie);
    expect(busBandwidthGBps('allReduce', 4096, time, t)).toBeLessThan(0.1 * pcie.busGBps);
  });

  test('is 0 at t = 1', () => {
    expect(busBandwidthGBps('allReduce', 1e6, 10, 1)).toBe(0);
  });
});

describe('interconnect presets', () => {
  test('state their numbers and sources: PCIe 7.6 GB/s (8×V100 machine), A100 240 GB/s, H100 370 GB/s', () => {
    expect(interconnectNames).toEqual(['pcie-gen3', 'nvlink-a100', 'nvswitch-h100']);
    expect(interconnectNames.map((n) => interconnectPresets[n].busGBps)).toEqual([7.6, 240, 370]);
    expect(pcie.source).toContain('8×V100 PCIe Gen3');
    expect(interconnectPresets['nvswitch-h100'].source).toContain('nccl-tests#212');
  });

  test('parse from their keys or custom:<α>:<GB/s>', () => {
    expect(parseInterconnect('nvlink-a100')).toBe(interconnectPresets['nvlink-a100']);
    expect(parseInterconnect('custom:5:25')).toMatchObject({ name: 'custom', alphaUs: 5, busGBps: 25 });
    expect(() => parseInterconnect('infiniband')).toThrow(
      'unknown interconnect "infiniband": use pcie-gen3, nvlink-a100, nvswitch-h100 or custom:<α µs>:<GB/s>.',
    );
  });

  test('reject a negative α or a non-positive bandwidth', () => {
    expect(() => customInterconnect(-1, 10)).toThrow('custom interconnect: α (-1 µs) must be a finite number ≥ 0.');
    expect(() => customInterconnect(1, 0)).toThrow(
      'custom interconnect: bandwidth (0 GB/s) must be a finite number > 0.',
    );
    expect(() => parseInterconnect('custom:1:abc')).toThrow('bandwidth (NaN GB/s)');
  });
});
