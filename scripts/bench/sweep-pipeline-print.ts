import type { PipelineSweepReport } from '../../src/session/pipeline-sweep.ts';

const kib = (b: number): string => (b >= 2 ** 20 ? `${(b / 2 ** 20).toFixed(2)} MiB` : `${(b / 1024).toFixed(1)} KiB`);
const share = (x: number | undefined): string => (x === undefined ? '—' : x.toFixed(3));

/** Rows of cells as left-aligned columns under their header. */
function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** Prints a pipeline run top to bottom: the layout, the step, the bubble measured and projected, each stage, each rank, the oracle. */
export function printPipelineSweep(r: PipelineSweepReport): void {
  const m = r.mesh;
  console.log(
    `pipeline on ${m.ranks} rank workers: tp ${m.tp} × pp ${m.pp} × dp ${m.dp}${m.vpp > 1 ? `, vpp ${m.vpp}` : ''}, schedule ${m.schedule}, ` +
      `m ${m.microBatches} micro-batches, L ${m.layers} blocks${m.sync ? `, DP sync ${m.sync}` : ''}; global batch ${m.globalBatch} sequences`,
  );
  console.log(`adapter: ${r.adapter}`);
  console.log(r.note);
  console.log(
    `\nstep: ${r.stepMs.toFixed(1)} ms (the measured step's first pass on any rank to its last event, DP syncs included), ${r.tokensPerSecond.toFixed(0)} tokens/s`,
  );
  console.log(
    `bubble: measured ${share(r.bubbleShare)} (the busiest stage's idle share of the passes' ${r.passSpanMs.toFixed(1)} ms); ` +
      `projected: ${r.projected.simulatedBubbleShare !== undefined ? `the projection's simulation on these pass times ${share(r.projected.simulatedBubbleShare)}, ` : ''}` +
      `${r.projected.formula} = ${share(r.projected.formulaShare)}`,
  );
  console.log(
    `\n${table(
      ['stage', 'blocks', 'params', 'idle measured', 'idle simulated', 'memory peak'],
      r.stages.map((s) => [
        String(s.stage),
        String(s.blocks),
        s.params.toLocaleString('en-US'),
        share(s.measuredIdleShare),
        share(s.simulatedIdleShare),
        kib(s.peakBytes),
      ]),
    )}`,
  );
  if (r.endStageExcess !== undefined)
    console.log(
      `the end stages hold ${r.endStageExcess.toFixed(2)}× the parameters of ${m.pp >= 3 ? 'a middle stage' : 'the other stage'} (embedding on the first, output layer on the last)`,
    );
  console.log(
    `\n${table(
      ['rank', 'tp', 'stage', 'replica', 'busy ms', 'idle', 'memory peak', 'p2p sent'],
      r.ranks.map((x) => [
        String(x.rank),
        String(x.tp),
        String(x.stage),
        String(x.replica),
        x.busyMs.toFixed(1),
        share(x.idleShare),
        kib(x.peakBytes),
        kib(x.p2pSentBytes),
      ]),
    )}`,
  );
  console.log(`\np2p: ${r.p2p.messages} messages, ${kib(r.p2p.bytes)}`);
  const w = r.oracle.worst;
  console.log(
    `oracle vs one device on the global batch: ${r.oracle.pass ? 'PASS' : 'FAIL'} — ${r.oracle.tensors} tensors, worst ${w.tensor}: max abs ${w.maxAbs.toExponential(2)} (tolerance ${w.tol.toExponential(2)})`,
  );
  if (r.baseline)
    console.log(
      `${m.tp === 1 ? 'one worker' : `tp ${m.tp} alone`} (p 1, d 1, the same ${m.microBatches * m.dp} micro-batches): step ${r.baseline.stepMs.toFixed(1)} ms, ${r.baseline.tokensPerSecond.toFixed(0)} tokens/s (oracle ${r.baseline.oraclePass ? 'PASS' : 'FAIL'}); this mesh: ${r.baseline.speedup.toFixed(3)}× its throughput`,
    );
}
