import type { BaseCollectives } from '../../../src/comm/base.ts';
import { createInProcessGroup } from '../../../src/comm/in-process.ts';
import { createPortMesh, PortRingCollectives } from '../../../src/comm/port-ring.ts';
import { TraceRecorder } from '../../../src/core/trace-recorder.ts';

/** Transports that run in one Node thread. */
export const nodeTransports = ['in-process', 'message-port'] as const;
export type NodeTransport = (typeof nodeTransports)[number];

/** A group of t communicators in this thread, with a trace recorder per rank. */
export function makeGroup(kind: NodeTransport, t: number, timeoutMs = 5_000) {
  const recorders = Array.from({ length: t }, () => new TraceRecorder());
  if (kind === 'in-process') {
    return {
      comms: createInProcessGroup(t, { timeoutMs, sinks: recorders }) as BaseCollectives[],
      recorders,
      close: () => {},
    };
  }
  const mesh = createPortMesh(t);
  const comms = mesh.map((ports, r) => new PortRingCollectives(r, t, ports, recorders[r], timeoutMs));
  return { comms: comms as BaseCollectives[], recorders, close: () => comms.forEach((c) => c.close()) };
}

/** Deterministic values in [−1, 1): the project's seeded generator. */
export { randomArray } from '../../../src/reference/random.ts';

export { rejectionOf } from '../../rejection.ts';
