import type { HfModel } from '../../src/megatron/hf-config.ts';
import type { MlaTerm } from '../../src/projection/layer/mla-layer.ts';
import type { MlaStepModel } from '../../src/projection/step/mla-step.ts';
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

/** The report lines of a step's MLA layer (mla-step.ts), ms per layer and micro-batch. */
export function mlaLines(tp: number, x: MlaStepModel): string[] {
  const ms = (v: number): string => `${v.toFixed(3)} ms`;
  const terms = (t: readonly MlaTerm[]): string => t.map((k) => `${k.term} ${(k.us / 1e3).toFixed(3)}`).join(', ');
  const mib = (b: number): string => `${(b / 2 ** 20).toFixed(1)} MiB`;
  return [
    `MLA at t=${tp}: per layer and micro-batch forward ${ms(x.forwardMs)} in place of the dense attention's ${ms(x.denseAttention.forwardMs)}; backward ${ms(x.backwardMs)} in place of ${ms(x.denseAttention.backwardMs)}${x.upProjRecomputeMs > 0 ? ` (+ ${ms(x.upProjRecomputeMs)} mla_up_proj recompute)` : ''}`,
    `  forward compute: ${terms(x.compute.forward)}`,
    `  backward compute: ${terms(x.compute.backward)}`,
    `  per layer on one rank: parameters ${x.paramDelta >= 0 ? '+' : '−'}${(Math.abs(x.paramDelta) / 1e6).toFixed(2)} M, kept activations ${x.keptDelta >= 0 ? '+' : '−'}${mib(Math.abs(x.keptDelta))} against the dense attention`,
  ];
}
