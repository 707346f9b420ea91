import { systemNames, systems, type SystemName } from './systems.ts';

/** The catalog system whose GPU the trace's device names mention (H100 → DGX H100, …); the default otherwise. */
export function systemFor(deviceNames: readonly string[]): SystemName {
  const d = deviceNames.join(' ');
  const found = systemNames.find((n) => {
    const gpu = systems[n].gpu.label.split(' ')[0]!;
    return d.includes(gpu) && n.startsWith('dgx');
  });
  return found ?? systemNames.find((n) => n.startsWith('dgx-h100')) ?? systemNames[0]!;
}
