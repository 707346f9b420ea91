import { expect, test } from 'vitest';
import { configFromPreset, type LayerConfig } from '../../../src/parallel/config.ts';
import { gatherLogical } from '../../../src/parallel/gather.ts';
import { compareWithReference, referenceConfig, type OracleReport } from '../../../src/parallel/oracle.ts';
import { planValidated } from '../../../src/parallel/plan.ts';
import { stepInputs } from '../../../src/parallel/step-data.ts';
import { createLayerPool } from '../../../src/session/pools.ts';

const failures = (r: OracleReport) =>
  r.entries
    .filter((e) => !e.pass)
    .map((e) => `${e.tensor}: ${e.maxAbs.toExponential(2)} > ${e.tol.toExponential(2)}`)
    .join('; ');

// The tensor-parallel layer, unchanged, on each TP group of a 2 × 2 mesh (4 rank workers, one
// GPUDevice each): both TP groups step at once, each over its own ring, and each group's output
// is checked against the TP = 1 run of its own configuration, with the layer's own oracle and its
// tolerances (parallel/oracle.ts). The two groups take different seeds (different weights and
// data, as two replicas would see different batches): a collective that crossed groups would mix
// them and fail the oracle.
for (const degrees of [
  { tp: 2, dp: 2 },
  { tp: 2, pp: 2 },
]) {
  const name = Object.entries(degrees)
    .map(([k, v]) => `${k} ${v}`)
    .join(' × ');
  test(`the layer at t = 2 on both TP groups of a ${name} mesh at once matches TP = 1 on each, with and without SP`, {
    timeout: 300_000,
  }, async () => {
    const pool = await createLayerPool(4, 'auto', 30_000, { degrees });
    try {
      const groups = pool.mesh.groups('tp');
      expect(groups).toEqual([
        [0, 1],
        [2, 3],
      ]);
      for (const sp of [false, true]) {
        const configs: LayerConfig[] = groups.map((_, g) =>
          configFromPreset('classroom', { tp: 2, sp, seed: 1234 + g }),
        );
        const inputs = configs.map(stepInputs);
        const [tuned] = await pool.run(
          'layerTune',
          { configs: configs.flatMap((c) => [c, referenceConfig(c)]), known: [] },
          [0],
        );
        const references = [];
        for (const [g, c] of configs.entries()) {
          const ref = referenceConfig(c);
          const [reply] = await pool.run(
            'layerStep',
            { config: ref, inputs: inputs[g]!, choices: tuned.choices, solo: true },
            [0],
          );
          references.push(gatherLogical(ref, (await planValidated(ref)).plan.ranks, [reply.output]));
        }
        const groupOf = (r: number) => groups.findIndex((m) => m.includes(r));
        const replies = await pool.run('layerStep', (r) => ({
          config: configs[groupOf(r)]!,
          inputs: inputs[groupOf(r)]!,
          choices: tuned.choices,
        }));
        const outputs = [];
        for (const [g, members] of groups.entries()) {
          const c = configs[g]!;
          const output = gatherLogical(
            c,
            (await planValidated(c)).plan.ranks,
            members.map((r) => replies[r]!.output),
          );
          const oracle = compareWithReference(c, references[g]!, output);
          expect(oracle.pass, `TP group ${g}${sp ? ' with SP' : ''}: ${failures(oracle)}`).toBe(true);
          outputs.push(output);
        }
        // The groups did compute different things (else the check above could not see a crossing).
        expect(outputs[0]!.y).not.toEqual(outputs[1]!.y);
        // Every collective of the step ran in a TP group: the trace's events are on each worker's own rank, 2 ranks a group.
        const events = (await pool.traces()).filter((e) => e.stream === 'comm');
        expect(new Set(events.map((e) => e.rank))).toEqual(new Set([0, 1, 2, 3]));
        events.forEach((e) => expect(e.comm!.groupSize).toBe(2));
      }
    } finally {
      await pool.dispose();
    }
  });
}
