import { describe, expect, test } from 'vitest';
import { interconnectPresets } from '../../../../src/hardware/interconnect.ts';
import { configFromPreset } from '../../../../src/parallel/config.ts';
import { makePlan } from '../../../../src/parallel/plan.ts';
import { modeledCommMs, sameComputeMs } from '../../../../src/schedule/durations.ts';
import { scheduleStep } from '../../../../src/schedule/schedule.ts';
import {
  collectiveName,
  labelCandidates,
  localShape,
  tooltipLines,
} from '../../../../src/ui/shared/timeline-format.ts';

async function gpt2(tp: number) {
  const plan = (await makePlan(configFromPreset('gpt2-layer', { tp }))).plan;
  return scheduleStep(
    plan,
    {
      computeMs: sameComputeMs(plan, (i) => plan.ops[i]!.flops / 5e6),
      commMs: modeledCommMs(plan, interconnectPresets['pcie-gen3']),
    },
    { overlap: false },
  );
}

describe('names of collectives', () => {
  test('collectives get their NCCL names', () => {
    expect(collectiveName('allReduce')).toBe('all-reduce');
    expect(collectiveName('reduceScatter')).toBe('reduce-scatter');
    expect(collectiveName('allGather')).toBe('all-gather');
  });
});

describe('labels of blocks', () => {
  test('a GEMM is labelled with its local [M,K]·[K,N] problem, batched ones with the batch', () => {
    expect(localShape({ gemm: { M: 32, N: 192, K: 768, batch: 1, flops: 0 }, inShapes: [] })).toBe(
      '[32,768]·[768,192]',
    );
    expect(localShape({ gemm: { M: 32, N: 32, K: 64, batch: 3, flops: 0 }, inShapes: [] })).toBe('3×[32,64]·[64,32]');
    expect(localShape({ inShapes: [[32, 1, 768], [768]] })).toBe('[32,1,768]·[768]');
  });

  test('the QKV query GEMM of gpt2-layer at t = 4 reads "qkv.q [32,768]·[768,192]" when wide, then shorter forms', async () => {
    const tl = await gpt2(4);
    const q = tl.events.find((e) => e.op === 'qkv.q')!;
    expect(labelCandidates(q)).toEqual([['qkv.q [32,768]·[768,192]'], ['qkv.q', '[32,768]·[768,192]'], ['qkv.q']]);
    const dgrad = tl.events.find((e) => e.op === 'mlp.down.dgrad')!;
    expect(labelCandidates(dgrad).at(-1)).toEqual(['down.dgrad']);
  });

  test('an all-reduce over 4 ranks of a [32,1,768] float32 tensor reads "all-reduce ×4 96 KiB"', async () => {
    const tl = await gpt2(4);
    const reduce = tl.events.find((e) => e.op === 'attn.reduce')!;
    expect(labelCandidates(reduce)[0]).toEqual(['all-reduce ×4 96 KiB']);
  });

  test('the tooltip of a GEMM gives M, N, K, FLOPs, GFLOP/s and duration; of a collective its bytes, wait and exposed time', async () => {
    const tl = await gpt2(4);
    const gemm = tooltipLines(tl.events.find((e) => e.op === 'mlp.up')!).join('\n');
    expect(gemm).toMatch(/M 32 · N 768 · K 768/);
    expect(gemm).toMatch(/37\.7 MFLOP · 5 GFLOP\/s/);
    expect(gemm).toMatch(/duration 7\.55 ms/);
    const reduce = tooltipLines(tl.events.find((e) => e.op === 'mlp.reduce' && e.rank === 2)!).join('\n');
    expect(reduce).toMatch(/all-reduce over 4 ranks/);
    expect(reduce).toMatch(/payload 96 KiB · ring sends 144 KiB per rank/);
    expect(reduce).toMatch(/wait 0 ms/);
    expect(reduce).toMatch(/exposed 37\.4 µs/);
  });
});

describe('an MoE block in a scheduled step', () => {
  test('an all-to-all with bytes per peer leads with them; an expert GEMM with its rows per expert', async () => {
    const tl = await gpt2(2);
    const coll = tl.events.find((e) => e.stream === 'comm')!;
    const peers = { ranks: [0, 1], sentBytes: [512, 2048], receivedBytes: [512, 1024] };
    const a2a = { ...coll, rank: 0, comm: { ...coll.comm!, peers } };
    expect(labelCandidates(a2a)[0]).toEqual([`${collectiveName(coll.collective!.op)} →1 2 KiB`]);
    expect(tooltipLines(a2a)).toContain('rank 1: sent 2 KiB, received 1 KiB');
    const gemm = tl.events.find((e) => e.gemm)!;
    const experts = { ...gemm, experts: { firstExpert: 4, tokens: [9, 3] } };
    expect(labelCandidates(experts)[0]).toEqual([`${gemm.op} experts 4–5 rows 9·3`]);
    expect(tooltipLines(experts)).toContain('experts 4–5: 12 token rows (9, 3 per expert)');
    expect(labelCandidates(gemm)[0]).toEqual([`${gemm.op} ${localShape(gemm)}`]);
  });
});
