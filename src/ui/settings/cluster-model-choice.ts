// Which model the cluster panel and the advisor project: a scenario a cluster would train, or this page's layer.
import { scenarios } from '../../megatron/scenarios.ts';
import type { ModelSizes } from '../../parallel/config.ts';

/** The cluster panel's model: a scenario of src/megatron/scenarios.ts by name, or the page's layer. */
export type ClusterModelChoice = 'seeds-v100' | 'megatron-1.7b' | 'layer';

/** Every choice, in display order (the seeds' tiny GPT first: the page's default). */
export const clusterModelChoices: readonly ClusterModelChoice[] = ['seeds-v100', 'megatron-1.7b', 'layer'];

/** A choice's words on the page. */
export const clusterModelNames: Readonly<Record<ClusterModelChoice, string>> = {
  'seeds-v100': "the seeds' tiny GPT (h 512, 8 heads, s 512, b 8)",
  'megatron-1.7b': 'Megatron-LM 1.7B GPT (h 2304, 24 heads, s 2048, b 4)',
  layer: "this page's layer",
};

/** The sizes the cluster panel projects: the scenario's, or the page's own. */
export function clusterSizes(choice: ClusterModelChoice, page: ModelSizes): ModelSizes {
  if (choice === 'layer') return page;
  const { s, b, h, heads, groups, ffn, vocab } = scenarios[choice]!.setup.sizes;
  return { s, b, h, heads, groups, ffn, vocab };
}
