import { describe, expect, test } from 'vitest';
import { parseMegatronCommand } from '../../../../src/megatron/megatron-command.ts';
import { parseSystem } from '../../../../src/hardware/systems.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';
import { analyseMeasured } from '../../../../src/kineto/measured-analysis.ts';
import { compareWithProjection } from '../../../../src/projection/studies/measured-vs-projected.ts';
import { loadJob } from '../../kineto/kineto-fixtures.ts';

const command =
  'torchrun --nproc-per-node 2 pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 2 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 --micro-batch-size 1 --global-batch-size 2 --bf16';

describe('a measured step beside its projection', () => {
  test('the measured side is the hand-computed step; the projected side is projectStep of the pasted command', async () => {
    const a = analyseMeasured(await loadJob('tp2-rank0.json', 'tp2-rank1.json'));
    const { setup, dtype } = parseMegatronCommand(command);
    const p = await projectStep(setup, { system: parseSystem('dgx-h100'), dtype });
    const c = compareWithProjection(a, 1, p);
    const row = (w: string) => c.rows.find((r) => r.what === w)!;
    // Step 1 (measured-analysis.test.ts): span 950 µs (rank 0); worst compute 750 µs, comm 350 µs (rank 0), exposed 200 µs (rank 1).
    expect(row('step').measuredMs).toBeCloseTo(0.95, 9);
    expect(row('compute').measuredMs).toBeCloseTo(0.75, 9);
    expect(row('comm').measuredMs).toBeCloseTo(0.35, 9);
    expect(row('exposed').measuredMs).toBeCloseTo(0.2, 9);
    expect(row('step').projectedMs).toBe(p.stepMs);
    expect(row('exposed').projectedMs).toBe(p.exposedMs);
    // Per collective, measured = mean over the two ranks: all-reduce (200 + 150)/2, all-gather 100, reduce-scatter 50 µs.
    const col = (k: string) => c.collectives.find((x) => x.collective === k)!;
    expect(col('allReduce').measuredMs).toBeCloseTo(0.175, 9);
    expect(col('allGather').measuredMs).toBeCloseTo(0.1, 9);
    expect(col('reduceScatter').measuredMs).toBeCloseTo(0.05, 9);
    // The projected collectives add up to the projected communication; TP=2 without SP has all-reduces only.
    expect(c.collectives.reduce((s, x) => s + x.projectedMs, 0)).toBeCloseTo(row('comm').projectedMs, 9);
    expect(col('allReduce').projectedMs).toBeGreaterThan(0);
    expect(col('allGather').projectedMs).toBe(0);
  });

  test('the whole trace compares the longest span and the whole-trace worst ranks', async () => {
    const a = analyseMeasured(await loadJob('tp2-rank0.json', 'tp2-rank1.json'));
    const { setup, dtype } = parseMegatronCommand(command);
    const c = compareWithProjection(a, undefined, await projectStep(setup, { system: parseSystem('dgx-h100'), dtype }));
    expect(c.rows.find((r) => r.what === 'step')!.measuredMs).toBeCloseTo(1.55, 9);
    expect(c.rows.find((r) => r.what === 'exposed')!.measuredMs).toBeCloseTo(0.5, 9);
  });
});
