// Which model the cluster panel and the advisor project: a scenario a cluster would train, a Hugging Face config (built-in or pasted), or this page's layer (pure, no DOM).
import { quoted } from '../../core/quote.ts';
import { publicHfConfig, publicHfConfigs } from '../../megatron/hf-configs.ts';
import { scenarios } from '../../megatron/scenarios.ts';
import type { ModelSizes } from '../../parallel/config.ts';

/** A scenario of src/megatron/scenarios.ts the page offers by name. */
export type ScenarioChoice = 'seeds-v100' | 'megatron-1.7b';

/**
 * The cluster panel's model: a scenario by name, the page's layer, `hf:NAME` (a built-in public
 * config of src/megatron/hf-configs.ts) or `hf:pasted` (the config.json pasted in this tab).
 */
export type ClusterModelChoice = ScenarioChoice | 'layer' | `hf:${string}`;

/** The choice that names the config.json pasted or dropped in this tab (kept in its sessionStorage). */
export const hfPasted = 'hf:pasted';

/** The choice of a built-in public config. */
export const hfChoice = (name: string): ClusterModelChoice => `hf:${name}`;

/** The built-in config a choice names, or undefined (a scenario, the layer, a pasted config). */
export const builtinHfConfig = (choice: ClusterModelChoice) =>
  choice.startsWith('hf:') && choice !== hfPasted ? publicHfConfig(choice.slice(3)) : undefined;

/** Every choice the cluster-model select lists, in display order (the seeds' tiny GPT first: the page's default). */
export const clusterModelChoices: readonly ClusterModelChoice[] = [
  'seeds-v100',
  'megatron-1.7b',
  ...publicHfConfigs.map((c) => hfChoice(c.name)),
  hfPasted,
  'layer',
];

const fixedNames: Readonly<Record<ScenarioChoice | 'layer', string>> = {
  'seeds-v100': "the seeds' tiny GPT (h 512, 8 heads, s 512, b 8)",
  'megatron-1.7b': 'Megatron-LM 1.7B GPT (h 2304, 24 heads, s 2048, b 4)',
  layer: "this page's layer",
};

/** A choice's words on the page. */
export function clusterModelName(choice: ClusterModelChoice): string {
  if (choice === hfPasted) return 'the pasted config.json';
  if (choice.startsWith('hf:')) return `${choice.slice(3)} (its Hugging Face config.json)`;
  return fixedNames[choice as ScenarioChoice | 'layer'];
}

/** Reads the hash's `cmodel`: a scenario, `layer`, `hf:NAME` of a built-in config, or `hf:pasted`; throws what to write instead. */
export function parseClusterModel(text: string): ClusterModelChoice {
  if ((clusterModelChoices as readonly string[]).includes(text)) return text as ClusterModelChoice;
  throw new Error(
    `cmodel must be seeds-v100, megatron-1.7b, layer, hf:pasted (a config.json pasted in this tab) or hf:NAME with NAME one of ${publicHfConfigs.map((c) => c.name).join(', ')}; got ${quoted(text)}.`,
  );
}

/** The sizes of a scenario choice (with its own s and b). */
export function scenarioSizes(choice: ScenarioChoice): ModelSizes {
  const { s, b, h, heads, groups, ffn, vocab } = scenarios[choice]!.setup.sizes;
  return { s, b, h, heads, groups, ffn, vocab };
}
