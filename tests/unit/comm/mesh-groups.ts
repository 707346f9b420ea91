import type { BaseCollectives } from '../../../src/comm/base.ts';
import { createInProcessGroup } from '../../../src/comm/in-process.ts';
import { createPortMesh, PortRingCollectives } from '../../../src/comm/port-ring.ts';
import { createSabRing } from '../../../src/comm/sab-layout.ts';
import { SabRingCollectives } from '../../../src/comm/sab-ring.ts';
import { TraceRecorder } from '../../../src/core/trace-recorder.ts';
import { assignGroups } from '../../../src/mesh/process-group.ts';
import { groupKinds, rankMesh, type GroupKind, type MeshDegrees } from '../../../src/mesh/rank-layout.ts';

/**
 * Transports whose point-to-point messages and all-to-alls run in one thread: the shared-memory
 * ring's p2p, and its all-to-all built with waits 'yield', wait without blocking (its other
 * collectives block in Atomics.wait, so only across workers).
 */
export const p2pTransports = ['in-process', 'message-port', 'sab-ring'] as const;

/**
 * A mesh of communicators in this thread: every group of every kind a ring of its own over
 * `kind` (in-process, MessagePort, or shared memory for p2p only, each pair's buffer
 * `p2pCapacityBytes`), rank r holding one communicator per kind and one trace recorder for all
 * of them, as a rank worker does.
 */
export function makeMesh(
  kind: (typeof p2pTransports)[number],
  degrees: Partial<MeshDegrees>,
  timeoutMs = 5_000,
  p2pCapacityBytes = 1 << 12,
) {
  const mesh = rankMesh(degrees);
  const recorders = Array.from({ length: mesh.world }, () => new TraceRecorder());
  const made: PortRingCollectives[] = [];
  const held = assignGroups(mesh, groupKinds, (view): BaseCollectives[] => {
    const g = view.members.length;
    const sinks = view.members.map((r) => recorders[r]!);
    if (kind === 'in-process') return createInProcessGroup(g, { timeoutMs, sinks, group: view });
    if (kind === 'sab-ring') {
      const ring = createSabRing(g, 1 << 12, p2pCapacityBytes);
      return view.members.map((_, i) => new SabRingCollectives(i, g, ring, sinks[i]!, timeoutMs, view, 'yield'));
    }
    const comms = createPortMesh(g).map((ports, i) => new PortRingCollectives(i, g, ports, sinks[i]!, timeoutMs, view));
    made.push(...comms);
    return comms;
  });
  return {
    mesh,
    recorders,
    /** Rank r's communicator in its group of `k`. */
    comm: (r: number, k: GroupKind): BaseCollectives => held[r]!.get(k)!.value,
    close: () => made.forEach((c) => c.close()),
  };
}
