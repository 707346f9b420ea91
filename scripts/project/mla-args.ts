import type { HfModel } from '../../src/megatron/hf-config.ts';
import { mlaFromFlags, mlaFromHf, type MlaSetup } from '../../src/megatron/mla.ts';

/** The multi-latent attention flags of `npm run project` (Megatron-LM core_v0.19.0 spellings). */
export const mlaOptions = {
  'multi-latent-attention': { type: 'boolean', default: false },
  'q-lora-rank': { type: 'string' },
  'kv-lora-rank': { type: 'string' },
  'qk-head-dim': { type: 'string' },
  'qk-pos-emb-head-dim': { type: 'string' },
  'v-head-dim': { type: 'string' },
  'qk-layernorm': { type: 'boolean', default: false },
} as const;

/** The parsed values of mlaOptions. */
export type MlaValues = { readonly [K in keyof typeof mlaOptions]?: string | boolean };

/** The usage lines of the MLA flags. */
export const mlaUsage = `Multi-latent attention (DeepSeek-V2/V3; Megatron-LM core_v0.19.0 spellings; docs/projection-moe.md):
  --multi-latent-attention               MLA in every layer (turns it on)
  --q-lora-rank R                        the query's latent (default none: one [h, n·d_q] projection)
  --kv-lora-rank R                       the key/value latent (default 32)
  --qk-head-dim D --qk-pos-emb-head-dim D --v-head-dim D   head widths (defaults 128, 64, 128)
  --qk-layernorm                         RMSNorm over the latents (DeepSeek's)`;

/**
 * The MLA setup of the flags, or of --hf-config's DeepSeek fields when no MLA flag is given;
 * undefined without either. A width flag without --multi-latent-attention is refused.
 */
export function parseMlaFlags(v: MlaValues, hf?: HfModel): MlaSetup | undefined {
  const given = (Object.keys(mlaOptions) as (keyof typeof mlaOptions)[]).filter(
    (k) => v[k] !== undefined && v[k] !== false,
  );
  if (!v['multi-latent-attention']) {
    const width = given.find((k) => k !== 'qk-layernorm');
    if (width) throw new Error(`--${width} is a multi-latent attention flag: give --multi-latent-attention too.`);
    return hf?.mla ? mlaFromHf(hf.mla) : undefined;
  }
  return mlaFromFlags((flag) => {
    const x = v[flag.slice(2) as keyof typeof mlaOptions];
    return x === false ? undefined : x;
  });
}
