import { describe, expect, test } from 'vitest';
import { hostTensor } from '../../../src/comm/host-tensor.ts';
import { ctrl, maxFingerprintNameBytes, readFingerprint, writeFingerprint } from '../../../src/comm/sab-layout.ts';
import { makeGroup, nodeTransports, rejectionOf } from './groups.ts';

describe.each(nodeTransports)('the logical tensor in the fingerprint over %s', (kind) => {
  test('two same-shape all-reduces issued in swapped order fail on every rank, naming each rank’s tensor', async () => {
    const g = makeGroup(kind, 3);
    const x = hostTensor([4, 2]);
    // Ranks 0 and 2 reduce ln1.wgrad then ln2.wgrad; rank 1 the other way round: same op, dtype, shape.
    const order = (r: number): string[] => (r === 1 ? ['ln2.wgrad', 'ln1.wgrad'] : ['ln1.wgrad', 'ln2.wgrad']);
    const errs = await Promise.all(
      [0, 1, 2].map((r) => rejectionOf(g.comms[r].allReduce(x, 'sum', order(r)[0]).then(() => undefined))),
    );
    errs.forEach((e, r) => {
      expect(e.name).toBe('CollectiveMismatchError');
      expect(e.message).toBe(
        `rank ${r}: collective call differs across ranks: ranks 0, 2 called allReduce(sum, f32 [4, 2]) of ln1.wgrad #1; ` +
          'rank 1 called allReduce(sum, f32 [4, 2]) of ln2.wgrad #1.',
      );
    });
    g.close();
  });

  test('the same names in the same order pass and reduce', async () => {
    const g = makeGroup(kind, 2);
    const ys = await Promise.all(
      [0, 1].map((r) => g.comms[r].allGather(hostTensor([2], new Float32Array([r, r])), 0, 'ln1.gather')),
    );
    ys.forEach((y) => expect(Array.from(y.data)).toEqual([0, 0, 1, 1]));
    g.close();
  });
});

describe('the shared-memory fingerprint', () => {
  const words = new Int32Array(new SharedArrayBuffer(ctrl.words * 4));

  test('round-trips a named call, an unnamed one, and overwrites a name with none', () => {
    const named = {
      seq: 7,
      op: 'reduceScatter',
      dtype: 'f32',
      shape: [8, 1, 16],
      dim: 0,
      reduceOp: 'sum',
      tensor: 'mlp.reduce',
    } as const;
    writeFingerprint(words, ctrl.fp(7, 1), named);
    expect(readFingerprint(words, ctrl.fp(7, 1))).toEqual(named);
    const unnamed = { seq: 9, op: 'allReduce', dtype: 'f32', shape: [4], reduceOp: 'max' } as const;
    writeFingerprint(words, ctrl.fp(9, 1), unnamed);
    expect(readFingerprint(words, ctrl.fp(9, 1))).toEqual(unnamed);
  });

  test('keeps the first bytes of a name longer than the slot', () => {
    const long = 'x'.repeat(maxFingerprintNameBytes + 10);
    writeFingerprint(words, ctrl.fp(2, 0), { seq: 2, op: 'barrier', dtype: 'f32', shape: [], tensor: long });
    expect(readFingerprint(words, ctrl.fp(2, 0)).tensor).toBe(long.slice(0, maxFingerprintNameBytes));
  });
});
