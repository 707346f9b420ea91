import type { BaseCollectives } from '../../../src/comm/base.ts';
import { createInProcessGroup } from '../../../src/comm/in-process.ts';
import { createPortMesh, PortRingCollectives } from '../../../src/comm/port-ring.ts';
import { TraceRecorder } from '../../../src/trace/recorder.ts';

/** Transports that run in one Node thread. */
export const nodeTransports = ['in-process', 'message-port'] as const;
export type NodeTransport = (typeof nodeTransports)[number];

/** A group of t communicators in this thread, with a trace recorder per rank. */
export function makeGroup(kind: NodeTransport, t: number, timeoutMs = 5_000) {
  const recorders = Array.from({ length: t }, () => new TraceRecorder());
  if (kind === 'in-process') {
    return { comms: createInProcessGroup(t, { timeoutMs, sinks: recorders }) as BaseCollectives[], recorders, close: () => {} };
  }
  const mesh = createPortMesh(t);
  const comms = mesh.map((ports, r) => new PortRingCollectives(r, t, ports, recorders[r], timeoutMs));
  return { comms: comms as BaseCollectives[], recorders, close: () => comms.forEach((c) => c.close()) };
}

/** Deterministic values in [−1, 1) (xorshift32). */
export function randomArray(n: number, seed: number): Float32Array {
  let s = (seed * 2654435761) >>> 0 || 1;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}

/** Rejection of `p` as an Error (fails the test when p resolves). */
export async function rejectionOf(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection, but the call resolved');
}
