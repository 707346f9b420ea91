import type { SweepReport } from '../../src/session/sweep.ts';
import { gemmEfficiency } from '../../src/schedule/gemm-efficiency.ts';

const pad = (v: string | number, n: number): string => String(v).padStart(n);
const mib = (b: number): string => `${(b / 2 ** 20).toFixed(2)} MiB`;
const kib = (b: number): string => (b >= 2 ** 20 ? mib(b) : `${(b / 1024).toFixed(1)} KiB`);
const ms = (v: number | undefined): string => (v === undefined ? '—' : v.toFixed(3));

/** Prints the sweep as tables, one section per degree. */
export function printSweep(r: SweepReport): void {
  console.log(`TP sweep on ${r.adapter}`);
  console.log(r.note);
  for (const d of r.degrees) {
    const c = d.config;
    console.log(
      `\n=== t=${c.tp}${c.sp ? ' + SP' : ''}  s=${c.s} b=${c.b} h=${c.h} heads=${c.heads} groups=${c.groups} ffn=${c.ffn} vocab=${c.vocab}  (transport: ${d.transport}) ===`,
    );
    const w = d.oracle.worst;
    console.log(
      `oracle vs TP=1: ${d.oracle.pass ? 'PASS' : 'FAIL'} — worst ${w.tensor}: max abs ${w.maxAbs.toExponential(2)} (tolerance ${w.tol.toExponential(2)}, max rel ${w.maxRel.toExponential(2)})` +
        (d.cpuOracle
          ? `; vs CPU twins: ${d.cpuOracle.pass ? 'PASS' : 'FAIL'} (worst ${d.cpuOracle.worst.tensor} ${d.cpuOracle.worst.maxAbs.toExponential(2)})`
          : d.cpuSkipped
            ? `; ${d.cpuSkipped}`
            : ''),
    );
    if (!d.oracle.pass)
      console.log(
        `  tensors over tolerance: ${d.oracle.entries
          .filter((e) => !e.pass)
          .map((e) => `${e.tensor} (${e.maxAbs.toExponential(2)} > ${e.tol.toExponential(2)})`)
          .join(', ')}`,
      );
    if (c.skipSpNormGradAllReduce)
      console.log('  (demonstration: the SP all-reduce of the norm-weight gradients was skipped)');
    if (d.loss !== undefined) console.log(`loss: ${d.loss.toFixed(6)}`);
    console.log(
      `kernel times: ${d.timing.method}${d.timing.quantized ? ' (timestamp queries were quantized to 100 µs: each GEMM timed alone over back-to-back dispatches, the rest of the step split by FLOPs)' : ''}, each rank alone`,
    );
    console.log(
      `\n  ${'GEMM'.padEnd(22)}${'phase'.padEnd(9)}${pad('M', 6)}${pad('N', 6)}${pad('K', 6)}${pad('batch', 6)}${pad('MFLOP', 9)}${pad('ms', 9)}${pad('GFLOP/s', 9)}`,
    );
    for (const g of d.gemms) {
      console.log(
        `  ${g.name.padEnd(22)}${g.phase.padEnd(9)}${pad(g.M, 6)}${pad(g.N, 6)}${pad(g.K, 6)}${pad(g.batch, 6)}${pad((g.flops / 1e6).toFixed(2), 9)}${pad(ms(g.ms), 9)}${pad(g.gflops.toFixed(2), 9)}`,
      );
    }
    if (d.collectives.length) {
      console.log(
        `\n  ${'collective'.padEnd(24)}${'phase'.padEnd(9)}${'op'.padEnd(14)}${pad('payload', 12)}${pad('ring sent', 12)}${pad('meas. ms', 10)}${pad('model ms', 10)}`,
      );
      for (const k of d.collectives) {
        console.log(
          `  ${k.name.padEnd(24)}${k.phase.padEnd(9)}${k.op.padEnd(14)}${pad(kib(k.payloadBytes), 12)}${pad(kib(k.ringBytesSent), 12)}${pad(ms(k.measuredMs), 10)}${pad(ms(k.modeledMs), 10)}`,
        );
      }
    } else {
      console.log('\n  no collectives (one rank)');
    }
    for (const tl of d.timelines) {
      console.log(
        `  step (${tl.comm}${tl.overlap ? ', dgrad all-reduce overlapped with wgrad' : ''}): ${ms(tl.stepMs)} ms; exposed comm per rank: ${tl.exposedMs.map(ms).join(', ')} ms; comm ${tl.commMs.map(ms).join(', ')} ms`,
      );
    }
    console.log(
      '\n  memory per rank: ' +
        d.memory
          .map(
            (m) =>
              `r${m.rank} params ${mib(m.parameterBytes)} grads ${mib(m.gradientBytes)} acts ${mib(m.activationBytes)}`,
          )
          .join(' | '),
    );
  }
  if (r.degrees.length > 1) printEfficiency(r);
}

/** What #view=gemm shows: per GEMM, GFLOP/s at each degree (% of the lowest degree's), and the step's speed-up vs the ideal. */
function printEfficiency(r: SweepReport): void {
  const eff = gemmEfficiency(r, false);
  const ts = eff.steps.map((s) => s.t);
  console.log(`
=== GEMM efficiency vs t (GFLOP/s, % of t=${ts[0]}) ===`);
  console.log(`  ${'GEMM'.padEnd(22)}${'split'.padEnd(8)}${ts.map((t) => pad(`t=${t}`, 16)).join('')}`);
  for (const g of eff.gemms) {
    console.log(
      `  ${g.name.padEnd(22)}${g.split.padEnd(8)}${ts
        .map((t) => {
          const d = g.byDegree.find((x) => x.t === t);
          return pad(d ? `${d.gflops.toPrecision(3)} (${(d.efficiency * 100).toFixed(0)}%)` : '—', 16);
        })
        .join('')}`,
    );
  }
  for (const s of eff.steps)
    console.log(
      `  t=${s.t}: step ${ms(s.stepMs)} ms (${s.comm}), exposed comm ${(s.commShare * 100).toFixed(2)}% of it, speed-up ${s.speedup.toFixed(2)}× (compute alone ${s.computeSpeedup.toFixed(2)}×, ideal ${s.t / ts[0]}×)`,
    );
}
