import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { calibrateSystem } from '../../../src/calibrate/calibrate-system.ts';
import { parseNcclTests } from '../../../src/calibrate/nccl-tests-parse.ts';
import { parseSystemFile, systemFileText } from '../../../src/calibrate/system-file.ts';
import { systemNames, systems, withFabric } from '../../../src/hardware/systems.ts';

describe('system files', () => {
  it('round-trips every catalog system, one on another fabric, and a calibrated one', () => {
    for (const n of systemNames) expect(parseSystemFile(systemFileText(systems[n]))).toEqual(systems[n]);
    const roce = withFabric(systems['dgx-h100'], 'roce-400');
    expect(parseSystemFile(systemFileText(roce))).toEqual(roce);
    const text = readFileSync('tests/fixtures/nccl-tests/nccl-1435-all-gather-2gpu.txt', 'utf8');
    const cal = calibrateSystem(
      systems['dgx-h100'],
      [{ run: parseNcclTests(text)[0]!, source: 'ag' }],
      [
        {
          label: 'qkv',
          M: 4096,
          N: 3072,
          K: 1024,
          batch: 1,
          precision: 'bf16',
          us: 31.5,
          device: 'NVIDIA H100 80GB HBM3',
        },
      ],
    ).system;
    const back = parseSystemFile(systemFileText(cal));
    expect(back).toEqual(cal);
    expect(back.gpu).toBe(systems['dgx-h100'].gpu);
  });

  it('names the field and what it must be', () => {
    const good = JSON.parse(systemFileText(systems['dgx-a100'])) as Record<string, unknown>;
    const bad = (patch: Record<string, unknown>): string => JSON.stringify({ ...good, ...patch });
    expect(() => parseSystemFile('{', 'f.json')).toThrow(
      /f.json: not JSON .* write it with npm run project -- --calibrate DIR/,
    );
    expect(() => parseSystemFile(bad({ version: 2 }))).toThrow(
      /kind and version must be "tp-playground-system" and 1, got/,
    );
    expect(() => parseSystemFile(bad({ gpu: 'h900' }))).toThrow(
      /file.gpu must be a catalog GPU \(v100-sxm2, .*got "h900"/,
    );
    expect(() => parseSystemFile(bad({ gpusPerNode: 2.5 }))).toThrow(
      /file.gpusPerNode must be a whole number from 1 to 1024/,
    );
    const intra = good.intra as Record<string, unknown>;
    expect(() => parseSystemFile(bad({ intra: { ...intra, busGBps: 0 } }))).toThrow(
      /intra.busGBps must be a number > 0, got 0\./,
    );
    expect(() => parseSystemFile(bad({ intra: { ...intra, fitted: [{ op: 'allreduce', ranks: 8 }] } }))).toThrow(
      /intra.fitted\[0\].op must be one of allReduce, allGather, reduceScatter, broadcast, sendRecv, allToAll/,
    );
    expect(() =>
      parseSystemFile(bad({ measuredGemms: [{ M: 1, N: 2, K: 3, batch: 1, precision: 'bf16', us: -1 }] })),
    ).toThrow(/measuredGemms\[0\].us must be a number > 0/);
  });
});
