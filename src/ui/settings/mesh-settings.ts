// The rank mesh the page's settings ask for, and its rules placed at their controls (pure, no DOM).
import { checkMeshLayout, isMesh, type MeshLayout } from '../../mesh/mesh-check.ts';
import { placeIssues, type ControlField, type FieldIssue } from './field-issues.ts';
import type { Settings } from './state.ts';

/** The mesh layout of some settings: every MeshLayout key is a Settings key of the same meaning. */
export const meshLayoutOf = (s: Settings): MeshLayout => ({
  tp: s.tp,
  pp: s.pp,
  vpp: s.vpp,
  dp: s.dp,
  m: s.m,
  schedule: s.schedule,
  layers: s.layers,
  b: s.b,
  gbatch: s.gbatch,
  vocab: s.vocab,
});

/** True when the settings run a mesh (p > 1 or d > 1) beside the TP layer. */
export const runsMesh = (s: Settings): boolean => isMesh(s);

/**
 * The mesh's rules broken by `s`, each at its control (the one just changed when it is involved).
 * They stop the mesh run only: the TP layer and the cluster panel's projection still run. The
 * cluster panel projects the mesh's d and m whether or not a mesh runs, so the global batch's rule
 * (G = b·d·m unless `auto`) holds always; the others only when a mesh runs.
 */
export function meshIssues(s: Settings, changed?: ControlField): FieldIssue[] {
  const all = checkMeshLayout(meshLayoutOf(s));
  return placeIssues(runsMesh(s) ? all : all.filter((i) => i.fields.includes('gbatch')), changed);
}
