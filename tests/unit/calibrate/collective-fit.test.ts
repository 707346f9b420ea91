// α–β fits of the ring model to nccl-tests runs, and the link model pricing with them.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { calibrateSystem } from '../../../src/calibrate/calibrate-system.ts';
import {
  fitCollective,
  fitLine,
  fitResiduals,
  ringTerms,
  runPlacement,
} from '../../../src/calibrate/collective-fit.ts';
import { opFromFileName, parseNcclTests, type NcclTestRun } from '../../../src/calibrate/nccl-tests-parse.ts';
import { fittedFor, type FittedCollective } from '../../../src/hardware/calibrated-rates.ts';
import { collectiveTimeUs } from '../../../src/hardware/interconnect.ts';
import { groupLink, systems, type SystemSpec } from '../../../src/hardware/systems.ts';

const run = (name: string): NcclTestRun => {
  const op = opFromFileName(name);
  return parseNcclTests(readFileSync(`tests/fixtures/nccl-tests/${name}`, 'utf8'), {
    source: name,
    ...(op && { op }),
  })[0]!;
};
const base: SystemSpec = systems['dgx-h100'];

describe('fitLine', () => {
  it('recovers a line through exact points (a = 20 µs, c = 1/400 µs per byte)', () => {
    const pts = [1e3, 1e5, 1e7, 1e9].map((bytes) => ({ bytes, timeUs: 20 + bytes / 400 }));
    const f = fitLine(pts);
    expect(f.interceptUs).toBeCloseTo(20, 6);
    expect(f.usPerByte).toBeCloseTo(1 / 400, 12);
    expect(f.maxRelError).toBeLessThan(1e-9);
  });
});

describe('fitCollective on real runs', () => {
  it('all_gather on 2 GPUs (nccl#1435): B = f/c, α = (a − base)/steps, and the model through the fit within its stated worst error', () => {
    const r = run('nccl-1435-all-gather-2gpu.txt');
    const place = runPlacement(r, 2, 8);
    expect(place).toEqual({ ranks: 2, nodes: 1, ranksPerNode: 2 });
    const fit = fitCollective(r, place, base.collectiveBaseUs, 'x');
    const line = fitLine(r.rows.map((x) => ({ bytes: x.bytes, timeUs: x.outOfPlace.timeUs })));
    const { steps, factor } = ringTerms('allGather', 2);
    expect(fit.busGBps).toBeCloseTo(factor / (line.usPerByte * 1e3), 9);
    expect(fit.alphaUs).toBeCloseTo((line.interceptUs - base.collectiveBaseUs) / steps, 9);
    // The large-message bus bandwidth lies between the measured busbw of the rows (77–126 GB/s at
    // 16–112 MiB, still rising) and the 2-rank ring's NVLink ceiling; its rows are within 6%.
    expect(fit.busGBps).toBeGreaterThan(125.56);
    expect(fit.maxRelError).toBeLessThan(0.06);
    // collectiveTimeUs on a link that carries the fit is the fit's model, row by row.
    const link = { ...base.intra, fitted: [fit] };
    for (const x of r.rows) {
      const t = base.collectiveBaseUs + collectiveTimeUs('allGather', x.bytes, 2, link);
      expect(Math.abs(t - x.outOfPlace.timeUs) / x.outOfPlace.timeUs).toBeLessThanOrEqual(fit.maxRelError + 1e-12);
    }
  });

  it('bus bandwidth per size: the measured column is nccl-tests’ busbw, the fitted within the fit’s worst error', () => {
    const r = run('nccl-1435-all-gather-2gpu.txt');
    const fit = fitCollective(r, runPlacement(r, 2, 8), base.collectiveBaseUs, 'x');
    const res = fitResiduals(r, fit, base.collectiveBaseUs);
    expect(res).toHaveLength(7);
    res.forEach((x, i) => {
      expect(Math.abs(x.measuredBusGBps - r.rows[i]!.outOfPlace.busGBps)).toBeLessThanOrEqual(
        0.011 + 1e-3 * x.measuredBusGBps,
      );
      // busbw ∝ 1/T, so |model/measured − 1| ≤ e/(1 − e) for a time error e.
      expect(Math.abs(x.modelBusGBps / x.measuredBusGBps - 1)).toBeLessThanOrEqual(
        fit.maxRelError / (1 - fit.maxRelError),
      );
    });
  });

  it('refuses a run whose sizes are all latency (sendrecv 256 B–4 KiB, nccl-tests#214) and one of one rank', () => {
    const r = run('nccl-tests-214-sendrecv-2node.txt');
    expect(() => fitCollective(r, runPlacement(r, 2, 8), 6.6, 'sr')).toThrow(
      /sr: sendRecv's time does not grow with the size over 256–4096 B: measure up to larger sizes/,
    );
    expect(() => fitCollective(r, { ranks: 1, nodes: 1, ranksPerNode: 1 }, 6.6, 'one')).toThrow(/needs 2 ranks/);
  });

  it('places a run by its hosts: two A40 hosts are two nodes of one rank', () => {
    expect(runPlacement(run('nccl-tests-214-sendrecv-2node.txt'), 2, 8)).toEqual({
      ranks: 2,
      nodes: 2,
      ranksPerNode: 1,
    });
    // Without hosts: 16 ranks on 8-GPU nodes are assumed 2 × 8.
    expect(runPlacement({ ...run('nccl-1435-all-gather-2gpu.txt'), hosts: [] }, 16, 8)).toEqual({
      ranks: 16,
      nodes: 2,
      ranksPerNode: 8,
    });
  });
});

describe('the link model with fits', () => {
  const fit = (op: FittedCollective['op'], ranks: number, busGBps: number, ranksPerNode = ranks): FittedCollective => ({
    op,
    ranks,
    ranksPerNode,
    alphaUs: 2,
    busGBps,
    points: 5,
    maxRelError: 0,
    source: 's',
  });

  it('prices a collective with the fit of the nearest group size (log₂) and keeps the ring formula in t', () => {
    const fits = [fit('allReduce', 2, 100), fit('allReduce', 8, 300), fit('allGather', 8, 50)];
    expect(fittedFor(fits, 'allReduce', 4)?.ranks).toBe(8); // |log₂ 2/4| = |log₂ 8/4|: the larger
    expect(fittedFor(fits, 'allReduce', 2)?.ranks).toBe(2);
    expect(fittedFor(fits, 'reduceScatter', 8)).toBeUndefined();
    const link = { ...base.intra, fitted: fits };
    // t = 4 with the 8-rank fit: 2(t−1)(α + S/(t·B)) = 6·(2 + 4e8/(4·300e3)) µs.
    expect(collectiveTimeUs('allReduce', 4e8, 4, link)).toBeCloseTo(6 * (2 + 4e8 / (4 * 300e3)), 9);
    // No reduce-scatter fit: the link's own α and B.
    expect(collectiveTimeUs('reduceScatter', 4e8, 4, link)).toBe(collectiveTimeUs('reduceScatter', 4e8, 4, base.intra));
  });

  it('scales a network fit by the NICs a group drives: measured with 8 ranks per node, a one-rank-per-node DP ring gets 1/8', () => {
    const system = { ...base, inter: { ...base.inter, fitted: [fit('allReduce', 16, 360, 8)] } };
    expect(groupLink(system, 16, 1).fitted![0]!.busGBps).toBeCloseTo(360 / 8, 9);
    expect(groupLink(system, 32, 8).fitted![0]!.busGBps).toBeCloseTo(360, 9);
    expect(groupLink(system, 4, 8)).toBe(system.intra);
  });
});

describe('calibrateSystem', () => {
  it('puts a run across two hosts on the network, with its ranks per node (dgx-spark-playbooks#103)', () => {
    const source = 'dgx-spark-103-all-reduce-2node.txt';
    const c = calibrateSystem(base, [{ run: run(source), source }], []);
    expect(c.fits.map((f) => [f.scope, f.fit.op, f.fit.ranks, f.placement.nodes, f.fit.ranksPerNode])).toEqual([
      ['inter', 'allReduce', 2, 2, 1],
    ]);
    expect(c.system.inter.fitted).toEqual([c.fits[0]!.fit]);
    expect(c.system.intra).toBe(base.intra);
    expect(c.notes).toEqual([
      "dgx-spark-103-all-reduce-2node.txt: allReduce measured up to 65536 B only: B (1.9 GB/s) is a small-message figure, not the link's; run up to -e 8G.",
    ]);
  });

  it('puts in-node fits on the intra link, says what it assumed and what it left out', () => {
    const runs = [
      'nccl-1435-all-gather-2gpu.txt',
      'nccl-tests-128-reduce-scatter-2x4.txt',
      'nccl-tests-214-sendrecv-2node.txt',
    ].map((source) => ({ run: run(source), source }));
    const c = calibrateSystem(base, runs, []);
    expect(c.system.name).toBe('dgx-h100+calibrated');
    expect(c.fits.map((f) => [f.scope, f.fit.op, f.fit.ranks])).toEqual([['intra', 'allGather', 2]]);
    expect(c.system.intra.fitted).toHaveLength(1);
    expect(c.system.inter.fitted).toBeUndefined();
    expect(c.system.measuredGemms).toBeUndefined();
    expect(c.notes).toEqual([
      'nccl-1435-all-gather-2gpu.txt: no host per rank in the paste: one node assumed (8 GPUs per node).',
      expect.stringMatching(
        /^nccl-tests-128-reduce-scatter-2x4.txt: reduceScatter left out: the paste does not say how many ranks/,
      ),
      expect.stringMatching(/^nccl-tests-214-sendrecv-2node.txt: sendRecv's time does not grow/),
    ]);
    // The catalog system is untouched.
    expect(base.intra.fitted).toBeUndefined();
  });
});
