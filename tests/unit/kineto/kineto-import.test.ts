import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { readTraceFile } from '../../../scripts/trace/trace-files.ts';
import { importKinetoTexts, readKinetoText } from '../../../src/kineto/kineto-import.ts';
import { TraceImportError } from '../../../src/kineto/kineto-read.ts';
import { fixture, loadJob } from './kineto-fixtures.ts';

const text = (name: string) => readFileSync(fixture(name), 'utf8');

describe('reading a Kineto trace', () => {
  test('ranks come from distributedInfo and the job clock starts at the earliest GPU event', async () => {
    const job = await loadJob('tp2-rank1.json', 'tp2-rank0.json');
    expect(job.ranks.map((r) => [r.rank, r.rankSource, r.file])).toEqual([
      [0, 'distributedInfo', 'tp2-rank0.json'],
      [1, 'distributedInfo', 'tp2-rank1.json'],
    ]);
    // rank 0's first kernel starts 100 µs after its base + 1 s; rank 1's base is 1 ms later and its ts 1 ms smaller.
    expect(job.ranks[0]!.slices[0]!.t0).toBe(0);
    expect(job.ranks[1]!.slices[0]!.t0).toBeCloseTo(0, 9);
    expect(job.ranks[0]!.deviceNames).toEqual(['NVIDIA H100 80GB HBM3']);
    expect(job.ranks[0]!.groups).toEqual([
      { name: '1', desc: 'TENSOR_MODEL_PARALLEL_GROUP', size: 2, ranks: '[0, 1]' },
    ]);
  });

  test('kernels, NCCL kernels and copies are told apart, with stream and collective', async () => {
    const [r0] = (await loadJob('tp2-rank0.json')).ranks;
    const count = (w: string) => r0!.slices.filter((s) => s.work === w).length;
    expect([count('compute'), count('comm'), count('memcpy'), count('memset')]).toEqual([6, 4, 1, 0]);
    expect([...new Set(r0!.slices.filter((s) => s.work === 'compute').map((s) => s.gpuStream))].sort()).toEqual([
      13, 7,
    ]);
    const ag = r0!.slices.find((s) => s.nccl?.collective === 'allGather')!;
    expect(ag).toMatchObject({ gpuStream: 20, t0: 0.65, t1: 0.75 });
    expect(ag.nccl).toMatchObject({
      dtype: 'bfloat16',
      bytes: 2097152,
      groupSize: 2,
      groupDesc: 'TENSOR_MODEL_PARALLEL_GROUP',
    });
    expect(r0!.slices.find((s) => s.work === 'memcpy')).toMatchObject({ bytes: 4194304, t0: 0.5, t1: 0.55 });
  });

  test('only the GPU side is kept; what was dropped is counted by category', async () => {
    const [r0] = (await loadJob('tp2-rank0.json')).ranks;
    expect(r0!.stats.kept).toBe(11);
    expect(r0!.stats.dropped).toMatchObject({ cpu_op: 2, python_function: 1, ac2g: 2, '(no cat)': 2 });
  });

  test('CPU-side steps assign each kernel to the step its launch fell in', async () => {
    const [r0] = (await loadJob('tp2-rank0.json')).ranks;
    // The Adam kernel runs at 0.9–0.95 ms, inside step 2's CPU range, but was launched in step 1.
    const adam = r0!.slices.find((s) => s.name.includes('multi_tensor_apply_kernel'))!;
    expect(adam.step).toBe(1);
    expect(r0!.steps).toEqual([
      { step: 1, t0: 0, t1: 0.95, source: 'cpu' },
      { step: 2, t0: 1, t1: 1.5, source: 'cpu' },
    ]);
  });

  test('GPU-side step annotations win and are put on the job clock', async () => {
    const [, r1] = (await loadJob('tp2-rank0.json', 'tp2-rank1.json')).ranks;
    expect(r1!.steps.map((s) => [s.step, s.source])).toEqual([
      [1, 'gpu_user_annotation'],
      [2, 'gpu_user_annotation'],
    ]);
    expect(r1!.steps[0]!.t0).toBeCloseTo(-0.01, 9);
    expect(r1!.steps[1]!.t1).toBeCloseTo(1.6, 9);
  });

  test('a gzipped file reads the same as the plain one', async () => {
    const plain = await loadJob('tp2-rank0.json', 'tp2-rank1.json');
    const gz = await loadJob('tp2-rank0.json', 'tp2-rank1.json.gz');
    expect(gz.ranks[1]!.slices).toEqual(plain.ranks[1]!.slices);
  });

  test('the reader gives the same result whatever the chunk size (1 character to the whole file)', () => {
    const whole = readKinetoText('r0', text('tp2-rank0.json'), 1 << 30);
    for (const chunk of [1, 7, 64, 1000])
      expect(readKinetoText('r0', text('tp2-rank0.json'), chunk).slices).toEqual(whole.slices);
  });

  test('without distributedInfo the rank is the file order, and the notes say so', async () => {
    const job = await loadJob('single-no-dist.json');
    expect(job.ranks[0]!.rankSource).toBe('file order');
    expect(job.notes.join(' ')).toMatch(/ranks follow the file order \(single-no-dist\.json → 0\)/);
    expect(job.ranks[0]!.slices.map((s) => s.work)).toEqual(['compute', 'comm', 'memset']);
  });

  test('a bare event array (the other Chrome-trace form) is read too', () => {
    const events = JSON.stringify(JSON.parse(text('single-no-dist.json')).traceEvents);
    expect(importKinetoTexts([{ name: 'bare.json', text: events }]).ranks[0]!.slices).toHaveLength(3);
  });
});

describe('bad input gets a message naming what is wrong', () => {
  const fails = async (names: string[], message: RegExp) => {
    const err = await loadJob(...names).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TraceImportError);
    expect((err as Error).message).toMatch(message);
  };
  test('a truncated file', () =>
    fails(['truncated.json'], /^truncated\.json: the JSON ends inside traceEvents .*truncated/));
  test('JSON that is not a trace names its top-level keys', () =>
    fails(['foreign.json'], /^foreign\.json: no "traceEvents" array.*\(top-level keys: name, version, scripts\)/));
  test('a trace without GPU kernels says how to record them', () =>
    fails(['cpu-only.json'], /^cpu-only\.json: 2 events but no GPU kernels.*ProfilerActivity\.CUDA/));
  test('two files of the same rank', () =>
    fails(['tp2-rank1.json', 'tp2-rank1.json.gz'], /tp2-rank1\.json and tp2-rank1\.json\.gz both record rank 1/));
  test('a file that is not there', () => fails(['missing.json'], /missing\.json: cannot be read \(ENOENT\)/));
  test('text that is not JSON at all', () => {
    expect(() => readKinetoText('notes.txt', 'hello')).toThrow(
      /^notes\.txt: the document does not start with '\{' or '\['/,
    );
  });
  test('an empty file', () => {
    expect(() => readKinetoText('empty.json', '')).toThrow(/^empty\.json: the file is empty/);
  });
  test('a corrupt gzip file', async () => {
    const { writeFileSync, mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const path = join(mkdtempSync(join(tmpdir(), 'kineto-')), 'bad.json.gz');
    writeFileSync(path, readFileSync(fixture('tp2-rank1.json.gz')).subarray(0, 200));
    await expect(readTraceFile(path)).rejects.toThrow(/bad\.json\.gz: gzip data is corrupt or truncated/);
  });
});
