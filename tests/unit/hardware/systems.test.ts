import { describe, expect, it } from 'vitest';
import { parseDtype } from '../../../src/hardware/dtype.ts';
import { gpuNames, gpus } from '../../../src/hardware/gpus.ts';
import { groupLink, parseSystem, systemNames, systems, withFabric } from '../../../src/hardware/systems.ts';

describe('the machine catalog', () => {
  it('lists the issue’s GPUs and systems, each with a source', () => {
    expect(gpuNames).toEqual([
      'v100-sxm2',
      'v100-pcie',
      'a100-sxm-80gb',
      'a100-sxm-40gb',
      'h100-sxm',
      'h200-sxm',
      'b200',
      'gb200-gpu',
    ]);
    expect(systemNames).toEqual([
      'v100-pcie-8',
      'dgx1-v100',
      'dgx2-v100',
      'dgx-a100',
      'dgx-h100',
      'dgx-a100-40gb',
      'dgx-h200',
      'dgx-b200',
      'gb200-nvl72',
    ]);
    for (const g of Object.values(gpus)) expect(g.source.length).toBeGreaterThan(20);
    for (const s of Object.values(systems)) {
      expect(s.source.length).toBeGreaterThan(10);
      expect(s.intra.source.length).toBeGreaterThan(10);
      expect(s.inter.source.length).toBeGreaterThan(10);
    }
  });

  it("puts the seeds' box on PCIe at the 7.6 GB/s bus bandwidth they measured", () => {
    const box = systems['v100-pcie-8'];
    expect(box.gpu.name).toBe('v100-pcie');
    expect(box.intra.busGBps).toBe(7.6);
    expect(box.gpusPerNode).toBe(8);
  });

  it('keeps a group inside a node on its links and sends a wider one over the network', () => {
    const dgx = systems['dgx-a100'];
    expect(groupLink(dgx, 8, 8)).toBe(dgx.intra);
    // DP over 4 nodes with t = 8: one rank per node, one NIC in the ring.
    expect(groupLink(dgx, 4, 1).busGBps).toBeCloseTo(0.96 * 25, 6);
    // t = 1, DP 32: eight ranks per node, eight rails.
    expect(groupLink(dgx, 32, 8).busGBps).toBeCloseTo(Math.min(240, 8 * 0.96 * 25), 6);
  });
});

describe('the 2020–2025 catalog (datasheet figures)', () => {
  it('gives per-GPU peaks and memory from the datasheets', () => {
    expect(gpus['a100-sxm-40gb']).toMatchObject({ hbmGBps: 1555, memoryGiB: 40, sms: 108 });
    expect(gpus['h200-sxm'].peakTflops).toMatchObject({ bf16: 989.5, fp8: 1979 });
    expect(gpus['h200-sxm'].hbmGBps).toBe(4800);
    // 141 GB decimal = 141e9 / 2^30 GiB.
    expect(gpus['h200-sxm'].memoryGiB).toBeCloseTo(131.32, 2);
    // DGX B200: 72 PF fp8 and 1,440 GB over 8 GPUs.
    expect(gpus.b200.peakTflops.fp8 * 8).toBe(36_000);
    expect(gpus.b200.peakTflops.fp8 * 2 * 8).toBe(72_000);
    expect(gpus['gb200-gpu'].peakTflops.bf16).toBe(2500);
  });

  it('puts a GB200 NVL72 rack in one NVLink domain of 72 GPUs with a NIC per GPU', () => {
    const nvl = systems['gb200-nvl72'];
    expect(nvl.gpusPerNode).toBe(72);
    expect(nvl.inter.nicsPerNode).toBe(72);
    // TP 8 × DP 9 inside the rack stays on NVLink; 144 GPUs cross the network.
    expect(groupLink(nvl, 72, 72)).toBe(nvl.intra);
    expect(groupLink(nvl, 144, 72).busGBps).toBeCloseTo(Math.min(720, 72 * 0.96 * 50), 6);
  });

  it('swaps the scale-out fabric, keeping the NICs', () => {
    const roce = withFabric(systems['dgx-h100'], 'roce-400');
    expect(roce.inter).toMatchObject({ fabric: 'roce', nicsPerNode: 8 });
    expect(roce.inter.nicGBps).toBeCloseTo(0.95 * 50, 6);
    expect(() => withFabric(systems['dgx-h100'], 'ib-xdr')).toThrow(/unknown fabric "ib-xdr": use ib-edr, ib-hdr/);
  });
});

describe('parseSystem and parseDtype', () => {
  it('accepts catalog names and a custom machine', () => {
    expect(parseSystem('dgx-h100')).toBe(systems['dgx-h100']);
    const c = parseSystem('custom:a100-sxm-80gb:4:2:100');
    expect(c.gpu).toBe(gpus['a100-sxm-80gb']);
    expect(c.gpusPerNode).toBe(4);
    expect(c.intra).toMatchObject({ alphaUs: 2, busGBps: 100 });
  });

  it('names what is wrong', () => {
    expect(() => parseSystem('dgx-9')).toThrow(/unknown system "dgx-9": use v100-pcie-8, .*custom:<gpu>/);
    expect(() => parseSystem('custom:t4:8:1:10')).toThrow(/unknown GPU "t4"/);
    expect(() => parseSystem('custom:h100-sxm:0:1:10')).toThrow(/GPUs per node \(0\)/);
    expect(() => parseSystem('custom:h100-sxm:8:-1:10')).toThrow(/α \(-1 µs\)/);
    expect(() => parseSystem('custom:h100-sxm:8:1:0')).toThrow(/bandwidth \(0 GB\/s\)/);
    expect(parseDtype('bf16')).toBe('bf16');
    expect(() => parseDtype('fp8')).toThrow(/unknown dtype "fp8": use fp16, bf16, fp32/);
  });
});
