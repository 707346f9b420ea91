// The GEMM sweep: the shapes the bundle asks for, the script that times them, the CSV it writes,
// and the projection pricing the measured shapes with their measurement.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sweepShapes } from '../../../src/calibrate/gemm-shapes.ts';
import { gemmSweepScript } from '../../../src/calibrate/gemm-sweep-script.ts';
import { gemmShapesCsv, gemmSweepColumns, parseGemmSweep } from '../../../src/calibrate/gemm-sweep.ts';
import { gemmTimeOn } from '../../../src/hardware/calibrated-rates.ts';
import { gemmTime, kernelModel } from '../../../src/hardware/kernel-time.ts';
import { clockFactor } from '../../../src/hardware/sustained-clock.ts';
import { systems } from '../../../src/hardware/systems.ts';
import { seedsV100 } from '../../../src/megatron/scenarios.ts';
import type { TrainingSetup } from '../../../src/megatron/training-setup.ts';
import { projectOps } from '../../../src/projection/layer/projected-layer.ts';
import { plans } from '../../../src/projection/step/layer-pricing.ts';
import { setupConfig } from '../../../src/megatron/training-setup.ts';

const setup: TrainingSetup = { ...seedsV100.setup, tp: 2 };
const machine = { system: systems['dgx-h100'], dtype: 'bf16' as const };

describe('the GEMM sweep', () => {
  it('asks for every distinct GEMM the projection prices, once each', async () => {
    const shapes = await sweepShapes(setup, machine);
    const keys = shapes.map((s) => `${s.M},${s.N},${s.K},${s.batch},${s.precision}`);
    expect(new Set(keys).size).toBe(keys.length);
    const { full } = await plans(setupConfig(setup));
    const priced = projectOps(full, machine).gemm.filter((g) => g !== undefined);
    expect(priced.length).toBeGreaterThan(shapes.length); // dgrad and wgrad repeat forward shapes
    expect(shapes.every((s) => s.precision === 'bf16')).toBe(true);
    expect(gemmShapesCsv(shapes).split('\n')[0]).toBe('label,m,n,k,batch,dtype');
  });

  it('the script is valid Python that reads gemm-shapes.csv and writes the columns parseGemmSweep reads', () => {
    const py = gemmSweepScript();
    expect(py).toContain(`out.writerow(${JSON.stringify([...gemmSweepColumns])})`);
    const dir = mkdtempSync(join(tmpdir(), 'sweep-'));
    writeFileSync(join(dir, 'gemm_sweep.py'), py);
    execFileSync('python3', ['-m', 'py_compile', join(dir, 'gemm_sweep.py')]);
  });

  it('reads gemm-sweep.csv and names what is wrong in it', () => {
    const head = gemmSweepColumns.join(',');
    const rows = parseGemmSweep(`${head}\nqkv,4096,3072,1024,1,bf16,31.5,818.2,NVIDIA H100 80GB HBM3\n`);
    expect(rows).toEqual([
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
    ]);
    expect(() => parseGemmSweep('m,n,k\n1,2,3')).toThrow(
      /the first line must be the header label,m,n,k,batch,dtype,us,tflops,device/,
    );
    expect(() => parseGemmSweep(`${head}\nq,4096,3072,1024,1,bf17,31.5,1,x`, 's.csv')).toThrow(
      /s.csv line 2: dtype must be one of fp32, fp16, bf16, fp8, got "bf17"/,
    );
    expect(() => parseGemmSweep(`${head}\nq,4096,0,1024,1,bf16,31.5,1,x`)).toThrow(
      /line 2: n must be a whole number ≥ 1, got "0"/,
    );
    expect(() => parseGemmSweep(`${head}\nq,4096,3072,1024,1,bf16,-1,1,x`)).toThrow(/line 2: us must be a number > 0/);
    expect(() => parseGemmSweep(`${head}\nq,4096,3072`)).toThrow(/line 2: 3 fields where the header has 9/);
  });

  it('a measured shape is priced at its measurement, every other shape by the model', async () => {
    const [a, b] = await sweepShapes(setup, machine);
    const measured = [{ ...a!, us: 1.25 * gemmTime(a!, machine.system.gpu, a!.precision).us }];
    const system = { ...machine.system, measuredGemms: measured };
    expect(gemmTimeOn(system, a!, a!.precision).us).toBe(measured[0]!.us);
    expect(gemmTimeOn(system, b!, b!.precision)).toEqual(gemmTime(b!, machine.system.gpu, b!.precision));
    // In a step, at the sustained clock (H100: r = MSMF/MAMF, sustained-clock.ts), the measurement
    // stretches as the model does: (measured − launch)/r + launch, r = 1 for an HBM-bound shape.
    const sustained = gemmTime(a!, machine.system.gpu, a!.precision, kernelModel, 'sustained');
    const r = sustained.memoryBound ? 1 : clockFactor(machine.system.gpu, 'sustained');
    expect(r).toBeLessThan(1);
    const inStep = (measured[0]!.us - kernelModel.launchUs) / r + kernelModel.launchUs;
    expect(gemmTimeOn(system, a!, a!.precision, 'sustained').us).toBeCloseTo(inStep, 9);
    // Through the layer's pricing: every op of that shape is priced so, every other as before.
    const { full } = await plans(setupConfig(setup));
    const was = projectOps(full, machine).gemm;
    const now = projectOps(full, { ...machine, system }).gemm;
    let hits = 0;
    was.forEach((g, i) => {
      if (!g) return;
      const op = full.ops[i]!;
      const same =
        op.kind === 'gemm' &&
        op.gemm.M === a!.M &&
        op.gemm.N === a!.N &&
        op.gemm.K === a!.K &&
        op.gemm.batch === a!.batch;
      if (same) hits++;
      expect(now[i]!.us).toBeCloseTo(same ? inStep : g.us, 9);
    });
    expect(hits).toBeGreaterThan(0);
  });
});
