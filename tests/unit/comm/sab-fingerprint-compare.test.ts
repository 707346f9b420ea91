import { describe, expect, test } from 'vitest';
import type { CollectiveCall } from '../../../src/comm/call.ts';
import { ctrl, sameFingerprint, writeFingerprint } from '../../../src/comm/sab-layout.ts';

describe('comparing shared-memory fingerprints word for word', () => {
  const words = new Int32Array(new SharedArrayBuffer(ctrl.words * 4));
  const [a, b] = [ctrl.fp(1, 0), ctrl.fp(1, 1)];
  const call: CollectiveCall = {
    seq: 1,
    op: 'allReduce',
    dtype: 'f32',
    shape: [4, 8],
    reduceOp: 'sum',
    tensor: 'mlp.reduce',
  };

  test('the same call matches, even over stale words left by longer calls before it', () => {
    // Slot b last held a 3-D call with a longer name: its dims and name words beyond the new call's are stale.
    writeFingerprint(words, b, { ...call, shape: [4, 8, 9], tensor: 'attention.qkv.gather' });
    writeFingerprint(words, a, call);
    writeFingerprint(words, b, call);
    expect(sameFingerprint(words, a, b)).toBe(true);
    writeFingerprint(words, a, { ...call, tensor: undefined });
    writeFingerprint(words, b, { ...call, tensor: undefined });
    expect(sameFingerprint(words, a, b)).toBe(true);
  });

  test.each([
    ['the shape', { shape: [8, 4] }],
    ['the rank count of the shape', { shape: [4, 8, 1] }],
    ['the reduction', { reduceOp: 'max' }],
    ['the op', { op: 'reduceScatter', dim: 0 }],
    ['the op: a ring exchange against an all-reduce', { op: 'ringExchange', reduceOp: undefined }],
    ['the tensor name', { tensor: 'mlp.reducf' }],
    ['a name against none', { tensor: undefined }],
    ['the sequence number', { seq: 3 }],
  ] as [string, Partial<CollectiveCall>][])('a call that differs in %s does not match', (_, change) => {
    writeFingerprint(words, a, call);
    writeFingerprint(words, b, { ...call, ...change });
    expect(sameFingerprint(words, a, b)).toBe(false);
    expect(sameFingerprint(words, b, a)).toBe(false);
  });
});
