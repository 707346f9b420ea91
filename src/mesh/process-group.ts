import { expertKinds, rankMesh, type GroupKind, type MeshSpec, type RankMesh } from './rank-layout.ts';

/**
 * One process group as a communicator sees it (plain data: it crosses to the rank workers): its
 * kind, its index among the groups of that kind, its members (global ranks; member i is the
 * group's rank i, its ring position) and the mesh, to name any rank by its coordinates.
 */
export interface GroupView {
  readonly kind: GroupKind;
  readonly index: number;
  readonly members: readonly number[];
  readonly mesh: MeshSpec;
}

/** Every group of the mesh, kind by kind, as views. */
export function groupViews(mesh: RankMesh, kinds: readonly GroupKind[]): GroupView[] {
  return kinds.flatMap((kind) =>
    mesh.groups(kind).map((members, index) => ({ kind, index, members, mesh: mesh.spec })),
  );
}

/** The laid-out meshes of specs seen, so that naming ranks in a message does not lay one out again. */
const laidOut = new Map<string, RankMesh>();

function meshOf(spec: MeshSpec): RankMesh {
  const key = JSON.stringify(spec);
  let m = laidOut.get(key);
  if (!m) laidOut.set(key, (m = rankMesh(spec.degrees, spec.order)));
  return m;
}

/** "rank 5 (tp 1, cp 0, dp 0, pp 1)"; for an expert group also its (etp, ep, edp). */
export function rankName(spec: MeshSpec, rank: number, expert = false): string {
  const c = meshOf(spec).coords(rank);
  const dense = `tp ${c.tp}, cp ${c.cp}, dp ${c.dp}, pp ${c.pp}`;
  return `rank ${rank} (${expert ? `${dense}; etp ${c.etp}, ep ${c.ep}, edp ${c.edp}` : dense})`;
}

/** Member i of `group` named by its global rank and coordinates. */
export function memberName(group: GroupView, i: number): string {
  return rankName(group.mesh, group.members[i]!, expertKinds.has(group.kind));
}

/** "the DP group 1 (ranks 1, 3)". */
export function groupName(group: GroupView): string {
  return `the ${group.kind.toUpperCase()} group ${group.index} (ranks ${group.members.join(', ')})`;
}

/** What a rank holds of one of its groups: the group, and what was made for its member. */
export interface HeldGroup<T> {
  readonly view: GroupView;
  readonly value: T;
}

/**
 * Per global rank, its group of each of `kinds` with what `perGroup` made for its member:
 * perGroup(view) returns one value per member, in member order (e.g. one communicator per rank).
 */
export function assignGroups<T>(
  mesh: RankMesh,
  kinds: readonly GroupKind[],
  perGroup: (view: GroupView) => readonly T[],
): Map<GroupKind, HeldGroup<T>>[] {
  const held = Array.from({ length: mesh.world }, () => new Map<GroupKind, HeldGroup<T>>());
  for (const view of groupViews(mesh, kinds)) {
    const values = perGroup(view);
    view.members.forEach((r, i) => held[r]!.set(view.kind, { view, value: values[i]! }));
  }
  return held;
}
