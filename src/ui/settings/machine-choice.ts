// Which machine the page's timeline describes, from the settings (pure, no DOM).
import { peakFlops } from '../../hardware/gpus.ts';
import type { Interconnect } from '../../hardware/interconnect.ts';
import { systemTopology } from '../../hardware/topology-catalog.ts';
import { parsePlacement } from '../../projection/links/placement.ts';
import { machineOnPlacement } from '../../projection/studies/placement-step.ts';
import type { Machine } from '../../projection/layer/projected-layer.ts';
import type { FieldIssue } from './field-issues.ts';
import { systemOf } from './system-files.ts';
import { commOf, type MachineMode, type Settings } from './state.ts';

/** Names of the machine modes, as the caption and the controls say them. */
export const machineNames: Readonly<Record<MachineMode, string>> = {
  cluster: 'a real cluster',
  browser: 'this browser as the cluster',
  custom: 'custom: compute measured here, communication on a modeled link (mixed)',
};

/** What a run needs to know about the machine, or the issues that stop it. */
export interface MachineChoice {
  /** Communication of the run: measured here or a modeled link (ignored when `projection` is set). */
  readonly comm: 'measured' | Interconnect;
  /** Set for a real cluster: the timeline is projected onto it. */
  readonly projection?: Machine;
  /** The caption's first words: which machine this is. */
  readonly label: string;
  readonly issues: readonly FieldIssue[];
}

/** The machine of some settings; a bad system, dtype or link comes back as an issue by its control. */
export function machineChoice(s: Settings): MachineChoice {
  const issues: FieldIssue[] = [];
  const message = (e: unknown): string => (e instanceof Error ? e.message : String(e));
  if (s.machine === 'browser') return { comm: 'measured', label: machineNames.browser, issues };
  if (s.machine === 'custom') {
    try {
      return { comm: commOf(s.net), label: machineNames.custom, issues };
    } catch (e) {
      return { comm: 'measured', label: machineNames.custom, issues: [{ field: 'net', message: message(e) }] };
    }
  }
  let system;
  try {
    system = systemOf(s.system);
  } catch (e) {
    return { comm: 'measured', label: machineNames.cluster, issues: [{ field: 'system', message: message(e) }] };
  }
  try {
    peakFlops(system.gpu, s.dtype); // V100 has no bf16 tensor cores: said by the dtype control
  } catch (e) {
    return { comm: 'measured', label: machineNames.cluster, issues: [{ field: 'dtype', message: message(e) }] };
  }
  return {
    comm: system.intra,
    projection: placedOn({ system, dtype: s.dtype }, s),
    label: `${machineNames.cluster} (${system.label}, ${s.dtype})`,
    issues,
  };
}

/**
 * `machine` with its groups' links priced under the page's placement (src/projection/studies/placement-step.ts),
 * for the machine picture's degrees: t, DP = GPUs / t. Unchanged (the catalog's one link per group)
 * where the system has no topology, t does not divide the GPUs or the placement does not fit the
 * node: the machine picture says which.
 */
function placedOn(machine: Machine, s: Settings): Machine {
  if (s.gpus % s.tp !== 0) return machine;
  try {
    const node = systemTopology(machine.system);
    const d = { tp: s.tp, pp: 1, vpp: 1, cp: 1, dp: s.gpus / s.tp };
    return machineOnPlacement(machine, node, d, s.gpus, parsePlacement(s.placement, node, s.gpus)).machine;
  } catch {
    return machine;
  }
}
