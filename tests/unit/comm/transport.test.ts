import { expect, test } from 'vitest';
import { chooseTransport } from '../../../src/ranks/transport.ts';

test('auto picks the shared-memory ring on a cross-origin isolated page and MessagePort elsewhere', () => {
  expect(chooseTransport('auto', true)).toBe('sab-ring');
  expect(chooseTransport('auto', false)).toBe('message-port');
  expect(chooseTransport('message-port', true)).toBe('message-port');
});

test('asking for the shared-memory ring without isolation names the two headers', () => {
  expect(() => chooseTransport('sab-ring', false)).toThrow(
    /needs a cross-origin isolated page: serve it with "Cross-Origin-Opener-Policy: same-origin" and "Cross-Origin-Embedder-Policy: require-corp"/,
  );
});
