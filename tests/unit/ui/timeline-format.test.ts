import { describe, expect, test } from 'vitest';
import { interconnectPresets } from '../../../src/hardware/interconnect.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { makePlan } from '../../../src/parallel/plan.ts';
import { modeledCommMs, sameComputeMs } from '../../../src/schedule/durations.ts';
import { scheduleStep } from '../../../src/schedule/schedule.ts';
import {
  collectiveName,
  formatBytes,
  formatFlops,
  formatMs,
  gflopsPerSecond,
  msTickFormat,
  labelCandidates,
  localShape,
  tooltipLines,
} from '../../../src/ui/shared/timeline-format.ts';

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

describe('formatting numbers for the timeline', () => {
  test('bytes are shown in binary units with at most three significant digits', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(98304)).toBe('96 KiB');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(3 * 2 ** 20)).toBe('3 MiB');
    expect(formatBytes(2 ** 30 * 1.25)).toBe('1.25 GiB');
  });

  test('times pick µs below a millisecond, ms below a second, then s', () => {
    expect(formatMs(0)).toBe('0 ms');
    expect(formatMs(0.0374)).toBe('37.4 µs');
    expect(formatMs(7.746)).toBe('7.75 ms');
    expect(formatMs(1234)).toBe('1.23 s');
    expect(formatMs(0.0000005)).toBe('0.5 ns');
  });

  test('an axis writes every tick in the unit of its domain: 0 µs beside 50 µs, never 0 ms', () => {
    const us = msTickFormat([0, 0.25]);
    expect([0, 0.05, 0.25].map(us)).toEqual(['0 µs', '50 µs', '250 µs']);
    const ms = msTickFormat([0.4, 2.5]);
    expect([0.4, 1, 2.5].map(ms)).toEqual(['0.4 ms', '1 ms', '2.5 ms']);
    expect(msTickFormat([0, 1500])(500)).toBe('0.5 s');
  });

  test('zoomed deep into a long step, the ticks take the decimals their step needs and never repeat', () => {
    const ticks = [123.4501, 123.4502, 123.4503, 123.4504];
    const f = msTickFormat([123.45005, 123.45045], ticks);
    expect(ticks.map(f)).toEqual(['123.4501 ms', '123.4502 ms', '123.4503 ms', '123.4504 ms']);
    // Where three significant digits already tell the ticks apart, they stay.
    expect([0, 0.05, 0.1].map(msTickFormat([0, 0.1], [0, 0.05, 0.1]))).toEqual(['0 µs', '50 µs', '100 µs']);
  });

  test('FLOPs take an SI prefix and GFLOP/s is FLOPs per ns of the duration', () => {
    expect(formatFlops(37748736)).toBe('37.7 MFLOP');
    expect(formatFlops(999)).toBe('999 FLOP');
    expect(gflopsPerSecond(5e6, 1)).toBe(5);
    expect(gflopsPerSecond(5e6, 0)).toBe(0);
  });

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
