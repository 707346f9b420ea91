import type { TransportName } from '../comm/collectives.ts';

/** Transports between rank workers. */
export type PoolTransport = Exclude<TransportName, 'in-process'>;

/**
 * Picks the transport: the shared ring needs SharedArrayBuffer, which a page has only when cross-origin
 * isolated (COOP + COEP headers); Node, which has no such flag, always has it.
 */
export function chooseTransport(
  wanted: 'auto' | PoolTransport = 'auto',
  isolated = globalThis.crossOriginIsolated !== false && typeof SharedArrayBuffer === 'function',
): PoolTransport {
  if (wanted === 'sab-ring' && !isolated) {
    throw new Error(
      'The sab-ring transport needs SharedArrayBuffer, which needs a cross-origin isolated page: serve it with ' +
        '"Cross-Origin-Opener-Policy: same-origin" and "Cross-Origin-Embedder-Policy: require-corp", or use transport "message-port".',
    );
  }
  return wanted === 'auto' ? (isolated ? 'sab-ring' : 'message-port') : wanted;
}
