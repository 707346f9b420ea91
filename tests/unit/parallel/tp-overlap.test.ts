import { describe, expect, test } from 'vitest';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { makePlan } from '../../../src/parallel/plan.ts';
import {
  chunkRowsInFull,
  chunkSchedule,
  parseTpOverlap,
  formatTpOverlap,
  type ChunkStage,
} from '../../../src/parallel/tp-overlap.ts';
import { validateConfig } from '../../../src/parallel/validate.ts';
import { scheduleStep } from '../../../src/schedule/schedule.ts';

// [send block, recv block] per ring step of a chunk's collective; blocks are ranks' pieces.
const comm = (chunk: number, steps: [number, number][]): ChunkStage['comm'] => ({
  chunk,
  steps: steps.map(([s, r]) => ({ send: { block: s, chunk }, recv: { block: r, chunk } })),
});

describe('chunk schedules, written out by hand', () => {
  test('t = 2, c = 2, all-gather then GEMM: each rank sends its own piece, multiplies chunk j while chunk j + 1 moves', () => {
    expect(chunkSchedule('gather-gemm', 2, 2, 0)).toEqual([
      { comm: comm(0, [[0, 1]]) },
      { comm: comm(1, [[0, 1]]), multiply: 0 },
      { multiply: 1 },
    ]);
    expect(chunkSchedule('gather-gemm', 2, 2, 1)).toEqual([
      { comm: comm(0, [[1, 0]]) },
      { comm: comm(1, [[1, 0]]), multiply: 0 },
      { multiply: 1 },
    ]);
  });

  test('t = 2, c = 2, GEMM then reduce-scatter: each rank sends the other partial and receives its own', () => {
    expect(chunkSchedule('gemm-reduce-scatter', 2, 2, 0)).toEqual([
      { multiply: 0 },
      { comm: comm(0, [[1, 0]]), multiply: 1 },
      { comm: comm(1, [[1, 0]]) },
    ]);
    expect(chunkSchedule('gemm-reduce-scatter', 2, 2, 1)).toEqual([
      { multiply: 0 },
      { comm: comm(0, [[0, 1]]), multiply: 1 },
      { comm: comm(1, [[0, 1]]) },
    ]);
  });

  test('t = 2, c = 2, GEMM then all-reduce (no SP): a reduce-scatter step, then an all-gather step of the reduced block', () => {
    expect(chunkSchedule('gemm-all-reduce', 2, 2, 0)).toEqual([
      { multiply: 0 },
      {
        comm: comm(0, [
          [1, 0],
          [0, 1],
        ]),
        multiply: 1,
      },
      {
        comm: comm(1, [
          [1, 0],
          [0, 1],
        ]),
      },
    ]);
  });

  test('t = 4, c = 4, all-gather then GEMM on rank 1: own piece first, then what came from rank 0, 3, 2 in turn', () => {
    const ring: [number, number][] = [
      [1, 0],
      [0, 3],
      [3, 2],
    ];
    expect(chunkSchedule('gather-gemm', 4, 4, 1)).toEqual([
      { comm: comm(0, ring) },
      { comm: comm(1, ring), multiply: 0 },
      { comm: comm(2, ring), multiply: 1 },
      { comm: comm(3, ring), multiply: 2 },
      { multiply: 3 },
    ]);
  });

  test('t = 4, c = 4, GEMM then reduce-scatter on rank 2: partials of blocks 1, 0, 3 sent on; block 2 (its own) reduced last', () => {
    const ring: [number, number][] = [
      [1, 0],
      [0, 3],
      [3, 2],
    ];
    expect(chunkSchedule('gemm-reduce-scatter', 4, 4, 2)).toEqual([
      { multiply: 0 },
      { comm: comm(0, ring), multiply: 1 },
      { comm: comm(1, ring), multiply: 2 },
      { comm: comm(2, ring), multiply: 3 },
      { comm: comm(3, ring) },
    ]);
  });

  test('bad arguments say what is wrong', () => {
    expect(() => chunkSchedule('gather-gemm', 1, 2, 0)).toThrow(/t must be a whole number ≥ 2/);
    expect(() => chunkSchedule('gather-gemm', 4, 2, 4)).toThrow(/rank 4 is not in a group of 4/);
  });
});

describe('chunk geometry and the setting', () => {
  test('under SP chunk j is piece j of every rank shard: t blocks of p·b rows, sl·b apart', () => {
    // s = 16, b = 2, t = 4: sl = 4 tokens per rank, c = 2: p = 2 tokens = 4 rows per piece.
    expect(chunkRowsInFull({ s: 16, b: 2, t: 4, sp: true }, 1, 2)).toEqual({ blocks: 4, rows: 4, at: 4, stride: 8 });
    expect(chunkRowsInFull({ s: 16, b: 2, t: 4, sp: false }, 1, 2)).toEqual({ blocks: 1, rows: 16, at: 16, stride: 0 });
  });

  test('"off" and "chunks:c" round-trip; anything else is refused with the form to use', () => {
    expect(formatTpOverlap(parseTpOverlap('chunks:4'))).toBe('chunks:4');
    expect(parseTpOverlap('off')).toEqual({ mode: 'off' });
    expect(() => parseTpOverlap('chunks:1')).toThrow(/"off" or "chunks:c" with a whole c ≥ 2/);
    expect(() => parseTpOverlap('4')).toThrow(/chunks:4/);
  });

  test('a chunk count that does not divide the tokens is an error naming the legal counts; at t = 1 a note', () => {
    const c = configFromPreset('classroom', { tp: 2, sp: true, tpOverlapChunks: 3 });
    const r = validateConfig(c);
    expect(r.ok).toBe(false);
    expect(r.errors.map((e) => e.message).join()).toContain('legal chunk counts are 2, 4');
    const one = validateConfig(configFromPreset('classroom', { tp: 1, tpOverlapChunks: 2 }));
    expect(one.ok).toBe(true);
    expect(one.notes.map((n) => n.rule)).toContain('tp-overlap-chunks');
  });
});

describe('the plan carries the chunks as typed data', () => {
  test('under SP: every chunk of the five MLP collectives, and the GEMM chunks between them', async () => {
    const c = configFromPreset('classroom', { tp: 2, sp: true, tpOverlapChunks: 2 });
    const { plan } = await makePlan(c);
    const chunked = plan.ops.filter((o) => o.chunk !== undefined);
    const collectives = chunked.filter((o) => o.kind === 'collective');
    // forward gather and reduce-scatter, backward gather of dY, input re-gather, dgrad reduce-scatter: 5 × c.
    expect(collectives.map((o) => (o.kind === 'collective' ? o.collective.op : ''))).toEqual([
      'allGather',
      'allGather',
      'reduceScatter',
      'reduceScatter',
      'allGather',
      'allGather',
      'allGather',
      'allGather',
      'reduceScatter',
      'reduceScatter',
    ]);
    expect(collectives.map((o) => o.chunk!.index)).toEqual([0, 1, 0, 1, 0, 1, 0, 1, 0, 1]);
    const gemms = chunked.filter((o) => o.kind === 'gemm');
    // gate, up forward; down forward; down dgrad; gate, up dgrad; gate, up wgrad: 8 GEMMs per chunk.
    expect(gemms).toHaveLength(8 * 2);
    // A chunk's GEMM covers t blocks of p·b rows: t = 2, s = 8 → sl = 4, p = 2: M = 2 per block, batch 2.
    const gate = gemms.find((o) => o.kind === 'gemm' && o.gemm.site.product === 'gate' && o.gemm.site.computes === 'C');
    expect(gate?.kind === 'gemm' && [gate.gemm.M, gate.gemm.batch]).toEqual([2, 2]);
  });

  test('without SP only the forward all-reduce of down is cut', async () => {
    const { plan } = await makePlan(configFromPreset('classroom', { tp: 2, tpOverlapChunks: 4 }));
    const collectives = plan.ops.filter((o) => o.kind === 'collective' && o.chunk !== undefined);
    expect(collectives.map((o) => (o.kind === 'collective' ? o.collective.op : ''))).toEqual(
      Array(4).fill('allReduce'),
    );
  });
});

describe('the step schedule runs chunk collectives off the compute stream', () => {
  // Durations from the plan alone: compute ∝ FLOPs, each collective ∝ its ring bytes (no α), the same on every rank.
  async function mlpExposed(tpOverlapChunks: number) {
    const c = configFromPreset('classroom', { tp: 2, sp: true, s: 32, tpOverlapChunks });
    const { plan } = await makePlan(c);
    const compute = plan.ops.map((o) => (o.kind === 'collective' ? 0 : 1e-3 + o.flops / 1e6));
    const comm = plan.ops.map((o) => (o.kind === 'collective' ? o.collective.ringBytesSent / 1e3 : 0));
    const tl = scheduleStep(plan, { computeMs: [compute, compute], commMs: [comm, comm] }, { overlap: true });
    const mlp = tl.events.filter(
      (e) => e.rank === 0 && e.kind === 'collective' && /^(ln2\.(gather|regather)|mlp\.)/.test(e.op),
    );
    return { exposed: mlp.reduce((a, e) => a + e.exposedMs, 0), comm: mlp.reduce((a, e) => a + (e.t1 - e.t0), 0), tl };
  }

  test('chunks hide part of the MLP communication that the unchunked layer exposes whole', async () => {
    const off = await mlpExposed(1);
    const on = await mlpExposed(4);
    // Unchunked, the MLP's non-async collectives hold the compute stream: exposed ≈ their whole time.
    expect(off.exposed).toBeGreaterThan(0);
    expect(on.exposed).toBeLessThan(off.exposed);
  });

  test('a GEMM chunk starts no earlier than the all-gather chunk it reads, and the next chunk moves under it', async () => {
    const { tl } = await mlpExposed(4);
    const ev = (op: string) => tl.events.find((e) => e.rank === 0 && e.op === op)!;
    expect(ev('mlp.gate[2/4]').t0).toBeGreaterThanOrEqual(ev('ln2.gather[2/4]').t1);
    expect(ev('ln2.gather[3/4]').t0).toBeLessThan(ev('mlp.up[2/4]').t1);
  });
});
