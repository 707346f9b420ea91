import { expect, test } from 'vitest';
import { presets } from '../../../src/parallel/config.ts';
import { charBatch, charVocab, decodeChars, encodeChars } from '../../../src/parallel/train-batches.ts';
import { trainText } from '../../../src/parallel/train-text.ts';

test('the vocabulary has the classroom preset’s 32 symbols and the training text encodes into it (a few kB)', () => {
  expect(charVocab).toHaveLength(presets.classroom.vocab);
  const ids = encodeChars(trainText);
  expect(ids.length).toBeGreaterThan(3000);
  expect(decodeChars(ids.slice(0, 20))).toBe('in olden times when ');
  expect(new Set(ids).size).toBeGreaterThan(25);
});

test('a character outside the vocabulary is named with what to do', () => {
  expect(() => encodeChars('ok €')).toThrow(/"€" at 3 is not in the vocabulary/);
});

test('a batch is [s, b]: column j is a run of the text and the targets are the next characters', () => {
  const tokens = encodeChars('abcdefghijklmnopqrstuvwxyz');
  const { ids, targets } = charBatch(tokens, 1, 4, 2); // starts (1·2 + 0)·4 = 8 and 12
  const col = (a: Float32Array, j: number) => decodeChars([0, 1, 2, 3].map((i) => a[i * 2 + j]));
  expect([col(ids, 0), col(ids, 1)]).toEqual(['ijkl', 'mnop']);
  expect([col(targets, 0), col(targets, 1)]).toEqual(['jklm', 'nopq']);
  expect(() => charBatch(tokens, 0, 30, 1)).toThrow(/has 26 characters; s = 30 needs at least 32/);
});
