import { quoted } from '../../core/quote.ts';
import type { NodeTopology } from '../../hardware/topology.ts';
import type { Degrees } from '../../megatron/training-setup.ts';
import { orderedGroups, type RankOrder, type RankToken } from '../../mesh/rank-layout.ts';

/**
 * Megatron's rank orders (megatron/training/initialize.py, core_v0.19.0): "tp-cp-ep-dp-pp" by
 * default, "tp-cp-ep-pp-dp" with --use-tp-pp-dp-mapping; the layout is mesh/rank-layout.ts's
 * (RankGenerator), here with ep = 1 and no limit on the ranks.
 */
export type { RankOrder };

/** The process groups a step communicates in: each group's ranks in ring order. */
export interface ProcessGroups {
  readonly tp: readonly (readonly number[])[];
  readonly cp: readonly (readonly number[])[];
  /** The gradient group: DP × CP ranks (Megatron reduces gradients over dp-cp). */
  readonly dpCp: readonly (readonly number[])[];
  /** Adjacent pipeline stages: the pairs a p2p send joins. */
  readonly pp: readonly (readonly number[])[];
  /** First and last pipeline stage (tied embedding gradients). */
  readonly embedding: readonly (readonly number[])[];
}

/** A process group kind. */
export type GroupKind = keyof ProcessGroups;

/** The group kinds in display order. */
export const groupKinds: readonly GroupKind[] = ['tp', 'cp', 'dpCp', 'pp', 'embedding'];

/** Groups of the ranks that differ only in `masked` (generate_masked_orthogonal_rank_groups' order). */
function maskedGroupsOf(d: Degrees, order: RankOrder, masked: readonly RankToken[]): number[][] {
  return orderedGroups(order, { tp: d.tp, cp: d.cp, ep: 1, dp: d.dp, pp: d.pp }, masked);
}

/** The process groups of degrees `d` under Megatron's rank order `order`. */
export function processGroups(d: Degrees, order: RankOrder = 'tp-cp-ep-dp-pp'): ProcessGroups {
  const pipelines = maskedGroupsOf(d, order, ['pp']);
  return {
    tp: maskedGroupsOf(d, order, ['tp']),
    cp: maskedGroupsOf(d, order, ['cp']),
    dpCp: maskedGroupsOf(d, order, ['dp', 'cp']),
    pp: pipelines.flatMap((p) => p.slice(0, -1).map((r, i) => [r, p[i + 1]!])),
    embedding: d.pp > 1 ? pipelines.map((p) => [p[0]!, p.at(-1)!]) : [],
  };
}

/** Where each rank runs: rank → global GPU index (node · GPUs per node + local GPU). */
export interface Placement {
  readonly name: string;
  readonly label: string;
  readonly order: RankOrder;
  /** [rank]: the global GPU it runs on. */
  readonly gpuOf: readonly number[];
}

/** The placements the page and CLI offer by name (custom:<GPU list> besides). */
export const placementNames = ['megatron', 'tp-pp-dp', 'tp-switch', 'tp-sockets'] as const;

/** A named placement. */
export type PlacementName = (typeof placementNames)[number];

/** What each named placement means, for the CLI's usage and the page's control. */
export const placementLabels: Readonly<Record<PlacementName, string>> = {
  megatron: 'Megatron default (tp-cp-ep-dp-pp, rank r on GPU r)',
  'tp-pp-dp': 'Megatron --use-tp-pp-dp-mapping (tp-cp-ep-pp-dp)',
  'tp-switch': 'TP under one switch (GPUs by socket, then PCIe switch)',
  'tp-sockets': 'TP across sockets (GPUs alternate between sockets)',
};

/** One node's GPUs in the order local ranks take them, for a named placement. */
function nodeOrder(name: PlacementName, node: NodeTopology): number[] {
  const gpus = Array.from({ length: node.gpus }, (_, g) => g);
  switch (name) {
    case 'megatron':
    case 'tp-pp-dp':
      return gpus;
    case 'tp-switch':
      return gpus.sort(
        (a, b) =>
          node.socketOf[a]! - node.socketOf[b]! ||
          (node.switchOf[a] ?? Infinity) - (node.switchOf[b] ?? Infinity) ||
          a - b,
      );
    case 'tp-sockets': {
      const bySocket = Array.from({ length: node.sockets }, (_, s) => gpus.filter((g) => node.socketOf[g] === s));
      const out: number[] = [];
      for (let i = 0; out.length < node.gpus; i++) for (const s of bySocket) if (i < s.length) out.push(s[i]!);
      return out;
    }
  }
}

/**
 * Checks a placement's spelling without a machine (the page's hash): a named placement, or
 * custom: and a comma list of distinct whole GPU indices. parsePlacement checks the list against
 * the node. Returns `text`; throws saying what to write.
 */
export function checkPlacementText(text: string): string {
  if ((placementNames as readonly string[]).includes(text)) return text;
  const custom = /^custom:(\d+(?:,\d+)*)$/.exec(text);
  if (custom && new Set(custom[1]!.split(',')).size === custom[1]!.split(',').length) return text;
  throw new Error(
    `placement ${quoted(text)}: use ${placementNames.join(', ')} or custom:<GPU list> (each GPU of a node once, e.g. custom:0,4,1,5,2,6,3,7).`,
  );
}

/**
 * The placement `text` names ("megatron", "tp-pp-dp", "tp-switch", "tp-sockets", or
 * "custom:<GPU list>": local rank i of every node on the i-th GPU listed, a permutation of
 * 0 … G−1) for `world` ranks on nodes of `node`. Throws saying what to change.
 */
export function parsePlacement(text: string, node: NodeTopology, world: number): Placement {
  const G = node.gpus;
  let order: number[];
  let name: string;
  let label: string;
  let rankOrder: RankOrder = 'tp-cp-ep-dp-pp';
  const custom = /^custom:(.*)$/.exec(text);
  if (custom) {
    const list = custom[1]!.split(',').map((x) => x.trim());
    const nums = list.map(Number);
    const sorted = [...nums].sort((a, b) => a - b);
    if (list.length !== G || !sorted.every((x, i) => x === i))
      throw new Error(
        `placement ${quoted(text)}: list each of the node's ${G} GPUs 0…${G - 1} once, in the order local ranks take them (e.g. custom:${Array.from({ length: G }, (_, i) => i).join(',')}).`,
      );
    order = nums;
    name = 'custom';
    label = `custom: local ranks on GPUs ${nums.join(',')}`;
  } else if ((placementNames as readonly string[]).includes(text)) {
    name = text;
    label = placementLabels[text as PlacementName];
    order = nodeOrder(text as PlacementName, node);
    if (text === 'tp-pp-dp') rankOrder = 'tp-cp-ep-pp-dp';
  } else {
    throw new Error(`unknown placement ${quoted(text)}: use ${placementNames.join(', ')} or custom:<GPU list>.`);
  }
  return {
    name,
    label,
    order: rankOrder,
    gpuOf: Array.from({ length: world }, (_, r) => Math.floor(r / G) * G + order[r % G]!),
  };
}
