import type { BaseCollectives } from '../../../src/comm/base.ts';
import { createInProcessGroup } from '../../../src/comm/in-process.ts';
import { createPortMesh, PortRingCollectives } from '../../../src/comm/port-ring.ts';
import { TraceRecorder } from '../../../src/core/trace-recorder.ts';
import { assignGroups } from '../../../src/mesh/process-group.ts';
import { groupKinds, rankMesh, type GroupKind, type MeshDegrees } from '../../../src/mesh/rank-layout.ts';
import type { NodeTransport } from './groups.ts';

/**
 * A mesh of communicators in this thread: every group of every kind a ring of its own over
 * `kind` (in-process or MessagePort), rank r holding one communicator per kind and one trace
 * recorder for all of them, as a rank worker does.
 */
export function makeMesh(kind: NodeTransport, degrees: Partial<MeshDegrees>, timeoutMs = 5_000) {
  const mesh = rankMesh(degrees);
  const recorders = Array.from({ length: mesh.world }, () => new TraceRecorder());
  const made: PortRingCollectives[] = [];
  const held = assignGroups(mesh, groupKinds, (view): BaseCollectives[] => {
    const g = view.members.length;
    const sinks = view.members.map((r) => recorders[r]!);
    if (kind === 'in-process') return createInProcessGroup(g, { timeoutMs, sinks, group: view });
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
