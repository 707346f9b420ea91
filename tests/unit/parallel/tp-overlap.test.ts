import { describe, expect, test } from 'vitest';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { makePlan } from '../../../src/parallel/plan.ts';
import {
  chunkRowsInFull,
  chunkSchedule,
  legalTpOverlapChunks,
  parseTpOverlap,
  formatTpOverlap,
  type ChunkStage,
} from '../../../src/parallel/tp-overlap.ts';
import { validateConfig } from '../../../src/parallel/validate.ts';
import { scheduleStep } from '../../../src/schedule/schedule.ts';

// One stage: the pieces of the GEMM chunk starting there (null: none), the piece sent to r + 1 and the one received from r − 1.
const stage = (multiply: readonly number[] | null, send?: number, recv?: number): ChunkStage => ({
  ...(multiply && { multiply }),
  ...(send !== undefined && { send, recv }),
});
// One-piece chunks: [piece multiplied, piece sent, piece received] per stage; a lone number: multiply only.
const ring = (...stages: ([number, number, number] | number)[]): ChunkStage[] =>
  stages.map((x) => (typeof x === 'number' ? stage([x]) : stage([x[0]], x[1], x[2])));

describe('chunk schedules, written out by hand', () => {
  test('t = 2, c = 2, all-gather + GEMM: each rank multiplies its own chunk while sending it, then the one it received', () => {
    expect(chunkSchedule('gather-gemm', 2, 2, 0)).toEqual(ring([0, 0, 1], 1));
    expect(chunkSchedule('gather-gemm', 2, 2, 1)).toEqual(ring([1, 1, 0], 0));
  });

  test("t = 2, c = 2, GEMM + reduce-scatter: each rank computes the other rank's partial first and sends it, its own last", () => {
    expect(chunkSchedule('gemm-reduce-scatter', 2, 2, 0)).toEqual(ring([1, 1, 0], 0));
    expect(chunkSchedule('gemm-reduce-scatter', 2, 2, 1)).toEqual(ring([0, 0, 1], 1));
  });

  test('t = 2, c = 2, GEMM then all-reduce (no SP): a reduce-scatter step, then an all-gather step of the reduced block', () => {
    const steps = [
      { send: { block: 1, chunk: 0 }, recv: { block: 0, chunk: 0 } },
      { send: { block: 0, chunk: 0 }, recv: { block: 1, chunk: 0 } },
    ];
    const ar = (chunk: number) => ({
      chunk,
      steps: steps.map((x) => ({ send: { ...x.send, chunk }, recv: { ...x.recv, chunk } })),
    });
    expect(chunkSchedule('gemm-all-reduce', 2, 2, 0)).toEqual([
      { multiply: [0] },
      { multiply: [1], allReduce: ar(0) },
      { allReduce: ar(1) },
    ]);
  });

  test('t = 4, c = 4, all-gather + GEMM on rank 1: its own chunk 1 first, then 0, 3, 2 as the ring brings them', () => {
    expect(chunkSchedule('gather-gemm', 4, 4, 1)).toEqual(ring([1, 1, 0], [0, 0, 3], [3, 3, 2], 2));
  });

  test('t = 4, c = 4, GEMM + reduce-scatter on rank 2: partials of 1 (farthest), 0, 3 sent on, its own block 2 last', () => {
    expect(chunkSchedule('gemm-reduce-scatter', 4, 4, 2)).toEqual(ring([1, 1, 0], [0, 0, 3], [3, 3, 2], 2));
  });

  test('t = 4, c = 8 (two pieces per shard): two rounds, round i over chunks 2q + i, own piece first', () => {
    expect(chunkSchedule('gather-gemm', 4, 8, 1)).toEqual(
      ring([2, 2, 0], [0, 0, 6], [6, 6, 4], 4, [3, 3, 1], [1, 1, 7], [7, 7, 5], 5),
    );
  });

  test('t = 4, c = 2, all-gather + GEMM on rank 1: stage 1 only moves shards; the first chunk is its own shard 1 with 0 (received at stage 1), the second 3 and 2', () => {
    expect(chunkSchedule('gather-gemm', 4, 2, 1)).toEqual([
      stage(null, 1, 0),
      stage([1, 0], 0, 3),
      stage(null, 3, 2),
      stage([3, 2]),
    ]);
    // Rank 0: its group wraps past rank 0 (0, then 3).
    expect(chunkSchedule('gather-gemm', 4, 2, 0)).toEqual([
      stage(null, 0, 3),
      stage([0, 3], 3, 2),
      stage(null, 2, 1),
      stage([2, 1]),
    ]);
  });

  test('t = 4, c = 2, GEMM + reduce-scatter on rank 2: the partials of 1 and 0 first (sent at stages 1, 2), then 3 and its own 2', () => {
    expect(chunkSchedule('gemm-reduce-scatter', 4, 2, 2)).toEqual([
      stage([1, 0], 1, 0),
      stage(null, 0, 3),
      stage([3, 2], 3, 2),
      stage(null),
    ]);
  });

  test('t = 8, c = 2: four shards per chunk, own first (gather) and own last (reduce-scatter)', () => {
    const gather = chunkSchedule('gather-gemm', 8, 2, 5).filter((x) => x.multiply);
    expect(gather.map((x) => x.multiply)).toEqual([
      [5, 4, 3, 2],
      [1, 0, 7, 6],
    ]);
    const reduce = chunkSchedule('gemm-reduce-scatter', 8, 2, 5).filter((x) => x.multiply);
    expect(reduce.map((x) => x.multiply)).toEqual([
      [4, 3, 2, 1],
      [0, 7, 6, 5],
    ]);
  });

  test('at every stage rank r receives what rank r − 1 sends, and every rank multiplies every chunk once', () => {
    for (const pattern of ['gather-gemm', 'gemm-reduce-scatter'] as const)
      for (const [t, c] of [
        [2, 2],
        [2, 6],
        [4, 2],
        [4, 8],
        [8, 2],
        [8, 4],
        [8, 8],
        [8, 24],
      ] as const) {
        const all = Array.from({ length: t }, (_, r) => chunkSchedule(pattern, t, c, r));
        const pieces = Math.max(t, c);
        all.forEach((stages, r) => {
          const chunks = stages.flatMap((x) => (x.multiply ? [x.multiply] : []));
          expect(chunks).toHaveLength(c);
          expect(chunks.flat().sort((a, b) => a - b)).toEqual([...Array(pieces).keys()]);
          stages.forEach((x, n) => expect(x.recv).toBe(all[(r + t - 1) % t]![n]!.send));
        });
      }
  });

  test('bad arguments say what is wrong', () => {
    expect(() => chunkSchedule('gather-gemm', 1, 2, 0)).toThrow(/t must be a whole number ≥ 2/);
    expect(() => chunkSchedule('gather-gemm', 4, 2, 4)).toThrow(/rank 4 is not in a group of 4/);
    expect(() => chunkSchedule('gather-gemm', 4, 3, 0)).toThrow(/c must divide t or be a multiple of it/);
    expect(() => chunkSchedule('gather-gemm', 4, 6, 0)).toThrow(/got c = 6, t = 4/);
  });
});

describe('chunk geometry and the setting', () => {
  test('chunk j is rows [j·s/c, (j+1)·s/c)', () => {
    expect(chunkRowsInFull({ s: 16, b: 2 }, 1, 2)).toEqual({ blocks: 1, rows: 16, at: 16, stride: 0 });
  });

  test('"off" and "chunks:c" round-trip; anything else is refused with the form to use', () => {
    expect(formatTpOverlap(parseTpOverlap('chunks:4'))).toBe('chunks:4');
    expect(parseTpOverlap('off')).toEqual({ mode: 'off' });
    expect(() => parseTpOverlap('chunks:1')).toThrow(/"off" or "chunks:c" with a whole c ≥ 2/);
    expect(() => parseTpOverlap('4')).toThrow(/chunks:4/);
  });

  test('under SP c divides t or is t·m with m dividing s/t; without SP c divides s; the error names the legal counts; at t = 1 a note', () => {
    expect(legalTpOverlapChunks({ s: 8, tp: 4, sp: true })).toEqual([2, 4, 8]);
    expect(legalTpOverlapChunks({ s: 8, tp: 8, sp: true })).toEqual([2, 4, 8]);
    expect(legalTpOverlapChunks({ s: 16, tp: 2, sp: true })).toEqual([2, 4, 8, 16]);
    expect(legalTpOverlapChunks({ s: 12, tp: 8, sp: true })).toEqual([]);
    expect(legalTpOverlapChunks({ s: 8, tp: 4, sp: false })).toEqual([2, 4, 8]);
    // The issue's page: the classroom layer (s = 8) at t = 4 with SP and 4 chunks, one per rank.
    expect(validateConfig(configFromPreset('classroom', { tp: 4, sp: true, tpOverlapChunks: 4 })).ok).toBe(true);
    expect(validateConfig(configFromPreset('classroom', { tp: 4, sp: true, tpOverlapChunks: 2 })).ok).toBe(true);
    const r = validateConfig(configFromPreset('classroom', { tp: 4, sp: true, tpOverlapChunks: 3 }));
    expect(r.ok).toBe(false);
    expect(r.errors.map((e) => e.message).join()).toMatch(
      /chunks:3 must divide t = 4 or be t times a divisor of each rank's s\/t = 8\/4 tokens.*legal chunk counts are 2, 4, 8/,
    );
    const noSp = validateConfig(configFromPreset('classroom', { tp: 2, tpOverlapChunks: 3 }));
    expect(noSp.errors.map((e) => e.message).join()).toContain(
      'must divide the s = 8 tokens (chunks cut the sequence): legal chunk counts are 2, 4, 8',
    );
    const one = validateConfig(configFromPreset('classroom', { tp: 1, tpOverlapChunks: 2 }));
    expect(one.ok).toBe(true);
    expect(one.notes.map((n) => n.rule)).toContain('tp-overlap-chunks');
  });
});

describe('the plan carries the chunks as typed data', () => {
  test('under SP: every round of the five MLP collectives, and the GEMM chunks in ring order between them', async () => {
    // t = 2, c = 4: m = 2 rounds, each moving one 2-token piece of each rank's 4-token shard; an
    // all-gather or reduce-scatter round is t − 1 = 1 ring exchange.
    const c = configFromPreset('classroom', { tp: 2, sp: true, tpOverlapChunks: 4 });
    const { plan } = await makePlan(c);
    const chunked = plan.ops.filter((o) => o.chunk !== undefined);
    const collectives = chunked.filter((o) => o.kind === 'collective');
    // forward gather and reduce-scatter, backward gather of dY, input re-gather, dgrad reduce-scatter: 5 × m.
    expect(collectives.map((o) => (o.kind === 'collective' ? o.collective.op : ''))).toEqual(
      Array(10).fill('ringExchange'),
    );
    // A gather's exchange carries the chunk of the GEMM it feeds (ring positions 1 and 3 of 4); a
    // reduce-scatter's the chunk whose partial it sends on (positions 0 and 2).
    const gather = [
      [1, 4],
      [3, 4],
    ];
    const reduce = [
      [0, 4],
      [2, 4],
    ];
    expect(collectives.map((o) => [o.chunk!.index, o.chunk!.of])).toEqual(
      [gather, reduce, gather, gather, reduce].flat(),
    );
    const gemms = chunked.filter((o) => o.kind === 'gemm');
    // gate, up forward; down forward; down dgrad; gate, up dgrad; gate, up wgrad: 8 GEMMs per chunk.
    expect(gemms).toHaveLength(8 * 4);
    // A chunk's GEMM is one block of (s/c)·b rows: s = 8, c = 4, b = 1 → M = 2, batch 1.
    const gate = gemms.find((o) => o.kind === 'gemm' && o.gemm.site.product === 'gate' && o.gemm.site.computes === 'C');
    expect(gate?.kind === 'gemm' && [gate.gemm.M, gate.gemm.batch]).toEqual([2, 1]);
    // The first GEMM chunk of a round is the rank's own: it waits for no collective; the next reads the round's exchange.
    const op = (name: string) => plan.ops.find((o) => o.name === name)!;
    expect(op('mlp.gate[1/4]').after).toEqual([]);
    expect(op('mlp.gate[2/4]').after).toEqual([op('ln2.gather[2/4]').index]);
    expect(op('mlp.gate[3/4]').after).toEqual([]);
    expect(op('mlp.gate[4/4]').after).toEqual([op('ln2.gather[4/4]').index]);
  });

  test('under SP at t = 4, c = 4: each GEMM chunk waits for the exchange of its own ring step, not for the round', async () => {
    const c = configFromPreset('classroom', { tp: 4, sp: true, tpOverlapChunks: 4 });
    const { plan } = await makePlan(c);
    const op = (name: string) => plan.ops.find((o) => o.name === name)!;
    for (const [label, gemm] of [
      ['ln2.gather', 'mlp.gate'],
      ['ln2.gather', 'mlp.up'],
      ['mlp.reduce.backward', 'mlp.down.dgrad'],
      ['ln2.regather', 'mlp.gate.wgrad'],
    ]) {
      const ex = [2, 3, 4].map((k) => op(`${label}[${k}/4]`));
      expect(ex.map((o) => o.kind === 'collective' && [o.collective.op, o.collective.inShape])).toEqual(
        // One ring step moves one [s/t, b, h] = [2, 1, 16] shard.
        Array(3).fill(['ringExchange', [2, 1, 16]]),
      );
      // Exchange k + 1 sends what exchange k received: it starts once that has arrived.
      expect(ex[1]!.after).toEqual([ex[0]!.index]);
      expect(ex[2]!.after).toEqual([ex[1]!.index]);
      // GEMM chunk k + 1 (k ≥ 1) reads exchange k's piece and waits for nothing else of the ring.
      for (const k of [1, 2, 3]) expect(op(`${gemm}[${k + 1}/4]`).after).toEqual([ex[k - 1]!.index]);
    }
    // GEMM + reduce-scatter: the partial of ring step k goes to r + 1 once its GEMM (k = 0) or the
    // add of the running sum received at step k − 1 has ended; the GEMMs wait for no collective.
    for (const [label, gemm] of [
      ['mlp.reduce', 'mlp.down'],
      ['mlp.dgrad.reduce', 'mlp.up.dgrad'],
    ]) {
      const ex = [1, 2, 3].map((k) => op(`${label}[${k}/4]`));
      expect(ex.map((o) => o.kind === 'collective' && o.collective.op)).toEqual(Array(3).fill('ringExchange'));
      // The running sum: one [s/t, b, h] piece added into the next partial.
      expect(op(`${label}.add[4/4]`).inShapes).toEqual([
        [2, 1, 16],
        [2, 1, 16],
      ]);
      expect(ex[0]!.after).toEqual([op(`${gemm}[1/4]`).index]);
      for (const k of [2, 3]) {
        expect(op(`${label}.add[${k}/4]`).after).toEqual([ex[k - 2]!.index]);
        expect(ex[k - 1]!.after).toEqual([op(`${label}.add[${k}/4]`).index]);
      }
      expect(op(`${label}.add[4/4]`).after).toEqual([ex[2]!.index]);
      for (const k of [1, 2, 3, 4]) expect(op(`${gemm}[${k}/4]`).after).toEqual([]);
    }
    const whole = plan.ops.filter(
      (o) =>
        o.kind === 'collective' && o.chunk && (o.collective.op === 'allGather' || o.collective.op === 'reduceScatter'),
    );
    expect(whole).toEqual([]);
  });

  test('under SP with c < t: one round per collective, and each chunk of t/c shards one GEMM dispatch per shard', async () => {
    // t = 4, c = 2: chunk 1 of rank 0 is its own shard 0 and shard 3; chunk 2 is shards 2 and 1.
    const c = configFromPreset('classroom', { tp: 4, sp: true, tpOverlapChunks: 2 });
    const { plan } = await makePlan(c);
    const collectives = plan.ops.filter((o) => o.kind === 'collective' && o.chunk !== undefined);
    // Each all-gather and reduce-scatter as t − 1 = 3 exchanges, named by the GEMM dispatch they
    // feed (all-gather) or whose partial they send on (reduce-scatter).
    const ring = (label: string, tags: string[]) => tags.map((tag) => [`${label}${tag}`, 'ringExchange']);
    const fed = ['[1/2]#2', '[2/2]#1', '[2/2]#2'];
    const sent = ['[1/2]#1', '[1/2]#2', '[2/2]#1'];
    expect(collectives.map((o) => [o.name, o.kind === 'collective' && o.collective.op])).toEqual([
      ...ring('ln2.gather', fed),
      ...ring('mlp.reduce', sent),
      ...ring('mlp.reduce.backward', fed),
      ...ring('ln2.regather', fed),
      ...ring('mlp.dgrad.reduce', sent),
    ]);
    const gate = plan.ops.filter(
      (o) => o.kind === 'gemm' && o.gemm.site.product === 'gate' && o.gemm.site.computes === 'C',
    );
    expect(gate.map((o) => o.name)).toEqual([
      'mlp.gate[1/2]#1',
      'mlp.gate[1/2]#2',
      'mlp.gate[2/2]#1',
      'mlp.gate[2/2]#2',
    ]);
    expect(gate.map((o) => o.chunk)).toEqual(
      [0, 0, 1, 1].map((index, j) => ({ index, of: 2, part: { index: j % 2, of: 2 } })),
    );
    // One shard per dispatch: s = 8, t = 4, b = 1 → M = 2.
    expect(gate.map((o) => o.kind === 'gemm' && o.gemm.M)).toEqual([2, 2, 2, 2]);
    // The own shard waits for no collective; the other three each for the exchange that brings it.
    expect(gate.map((o) => o.after)).toEqual([[], ...collectives.slice(0, 3).map((o) => [o.index])]);
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
  // Durations from the plan alone: compute ∝ FLOPs (flopsPerMs), each collective ∝ its ring bytes (no α), the same on every rank.
  async function mlpExposed(tpOverlapChunks: number, flopsPerMs = 1e6) {
    const c = configFromPreset('classroom', { tp: 2, sp: true, s: 32, tpOverlapChunks });
    const { plan } = await makePlan(c);
    const compute = plan.ops.map((o) => (o.kind === 'collective' ? 0 : 1e-3 + o.flops / flopsPerMs));
    const comm = plan.ops.map((o) => (o.kind === 'collective' ? o.collective.ringBytesSent / 1e3 : 0));
    const tl = scheduleStep(plan, { computeMs: [compute, compute], commMs: [comm, comm] }, { overlap: true });
    const mlp = tl.events.filter(
      (e) => e.rank === 0 && e.kind === 'collective' && /^(ln2\.(gather|regather)|mlp\.)/.test(e.op),
    );
    return { exposed: mlp.reduce((a, e) => a + e.exposedMs, 0), comm: mlp.reduce((a, e) => a + (e.t1 - e.t0), 0), tl };
  }

  test('chunks hide part of the MLP communication that the unchunked layer exposes whole', async () => {
    // Compute at 1e4 FLOP/ms: a GEMM chunk (≈ 0.41 ms) is about as long as a chunk exchange (0.512 ms),
    // so what the chunks hide is a large share of the comm, not rounding (at 1e6 FLOP/ms it is 0.005 ms).
    const off = await mlpExposed(1, 1e4);
    const on = await mlpExposed(4, 1e4);
    const ev = (tl: typeof on.tl, op: string) => tl.events.find((e) => e.rank === 0 && e.op === op)!;
    // Unchunked, the forward gather, the forward reduce and the backward reduce hold the compute stream:
    // each is exposed whole (the async re-gather and dgrad reduce hide under the dgrad/wgrad GEMMs).
    const held = ['ln2.gather', 'mlp.reduce', 'mlp.reduce.backward'].map((op) => ev(off.tl, op));
    expect(off.exposed).toBeCloseTo(
      held.reduce((a, e) => a + e.t1 - e.t0, 0),
      9,
    );
    // Chunked (t = 2, c = 4: two exchanges each), every one of those six exchanges has a GEMM chunk
    // queued under it that does not read it (the own chunk under the gather; the next down chunk
    // under the reduce-scatter), so each hides at least min(exchange, GEMM chunk): the chunked
    // exposure is at least 6·min(0.512, 0.41) ≈ 2.5 ms below the unchunked one. With the chunks
    // holding the compute stream it is only 1.86 ms below (1.21 ms exposed).
    const exchange = ev(on.tl, 'ln2.gather[2/4]');
    const gemmChunk = ev(on.tl, 'mlp.gate[1/4]');
    const hiddenAtLeast = 6 * Math.min(exchange.t1 - exchange.t0, gemmChunk.t1 - gemmChunk.t0);
    expect(hiddenAtLeast).toBeGreaterThan(2);
    expect(on.exposed).toBeLessThanOrEqual(off.exposed - hiddenAtLeast + 1e-9);
  });

  test("the own chunk runs under its round's exchange, the next starts no earlier than it arrives, and the next round moves under them", async () => {
    // t = 2, c = 4: two rounds; GEMM chunks 1, 2 are round 1's (own, then received), 3, 4 round 2's.
    const { tl } = await mlpExposed(4);
    const ev = (op: string) => tl.events.find((e) => e.rank === 0 && e.op === op)!;
    expect(ev('mlp.gate[1/4]').t0).toBeLessThan(ev('ln2.gather[2/4]').t1);
    expect(ev('mlp.gate[2/4]').t0).toBeGreaterThanOrEqual(ev('ln2.gather[2/4]').t1);
    expect(ev('ln2.gather[4/4]').t0).toBeLessThan(ev('mlp.up[2/4]').t1);
  });
});
