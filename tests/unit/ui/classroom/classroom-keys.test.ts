import { expect, test } from 'vitest';
import { slideAction } from '../../../../src/ui/classroom/classroom-keys.ts';

test('presenter keys: arrows, space and page keys move, Home and End jump, F presents', () => {
  expect(['ArrowRight', 'ArrowDown', 'PageDown', ' '].map((k) => slideAction(k, 'BODY'))).toEqual(
    Array(4).fill('next'),
  );
  expect(['ArrowLeft', 'ArrowUp', 'PageUp'].map((k) => slideAction(k, 'BODY'))).toEqual(Array(3).fill('prev'));
  expect([
    slideAction('Home', 'BODY'),
    slideAction('End', 'BODY'),
    slideAction('f', 'BODY'),
    slideAction('F', 'BODY'),
  ]).toEqual(['first', 'last', 'present', 'present']);
  expect(slideAction('x', 'BODY')).toBeUndefined();
});

test('keys typed into a field do nothing; space on a button or check box presses it, arrows still move', () => {
  expect(slideAction('ArrowRight', 'INPUT', 'number')).toBeUndefined();
  expect(slideAction('f', 'TEXTAREA')).toBeUndefined();
  expect(slideAction('End', 'SELECT')).toBeUndefined();
  expect(slideAction(' ', 'BUTTON')).toBeUndefined();
  expect(slideAction(' ', 'INPUT', 'checkbox')).toBeUndefined();
  expect(slideAction('End', 'INPUT', 'checkbox')).toBe('last');
  expect(slideAction('ArrowLeft', 'BUTTON')).toBe('prev');
});
