import { describe, expect, test } from 'vitest';
import { gemmKernelHash, gemmStoreKey, storedChoicesFor, toStoredChoices } from '../../../src/kernels/gemm-cache.ts';
import { gemmShapeClass } from '../../../src/kernels/gemm-choice.ts';
import { denseProblem } from '../../../src/reference/gemm.ts';

const adapter = 'google/swiftshader/0xc0de/SwiftShader Device';

describe('GEMM tuning cache keys', () => {
  test('the kernel hash is 8 hex digits and stable within a build', () => {
    expect(gemmKernelHash()).toMatch(/^[0-9a-f]{8}$/);
    expect(gemmKernelHash()).toBe(gemmKernelHash());
  });

  test('stored decisions round-trip for the same adapter and kernels', () => {
    const stored = toStoredChoices(adapter, [
      ['M10N10K10nn', 'quad16'],
      ['MsNsKsnn', 'naive'],
    ]);
    expect(Object.keys(stored)).toEqual([gemmStoreKey(adapter, 'M10N10K10nn'), gemmStoreKey(adapter, 'MsNsKsnn')]);
    expect(storedChoicesFor(stored, adapter)).toEqual([
      ['M10N10K10nn', 'quad16'],
      ['MsNsKsnn', 'naive'],
    ]);
  });

  test('decisions made on other kernels, on another adapter, or naming no known variant are not used', () => {
    const stored = {
      ...toStoredChoices(adapter, [['M10N10K10nn', 'quad16']], '00000000'),
      ...toStoredChoices('nvidia/ampere/0x2204/', [['M10N10K10nn', 'tiled']]),
      [gemmStoreKey(adapter, 'M9N9K9nn')]: 'quad99',
    };
    expect(storedChoicesFor(stored, adapter)).toEqual([]);
    expect(storedChoicesFor('not an object', adapter)).toEqual([]);
    expect(storedChoicesFor(null, adapter)).toEqual([]);
  });
});

describe('GEMM shape classes', () => {
  test('above 128 each power of two is its own class, so the bench shapes are tuned apart', () => {
    expect(gemmShapeClass(denseProblem(256, 256, 256))).toBe('M8N8K8nn');
    expect(gemmShapeClass(denseProblem(1024, 1024, 1024))).toBe('M10N10K10nn');
    expect(gemmShapeClass(denseProblem(512, 4096, 1024))).toBe('M9N12K10nn');
    expect(gemmShapeClass(denseProblem(513, 300, 64, { transB: true }))).toBe('M10N9Kmnt');
    expect(gemmShapeClass(denseProblem(1, 16, 17))).toBe('M1NsKmnn');
  });
});
