// The page's FSDP setting as the URL hash writes it: off, a Megatron-FSDP sharding strategy, or FSDP2 (pure, no DOM).
import { shardingStrategies, type FsdpSetup, type ShardingStrategy } from '../../megatron/fsdp.ts';
import { quoted } from '../../core/quote.ts';

/** FSDP2's two words: reshard after forward (Megatron's default) or keep the gathered weights (--torch-fsdp2-no-reshard-after-forward). */
const fsdp2Words = { fsdp2: true, 'fsdp2-no-reshard': false } as const;

/** Every value of `#fsdp=`, in display order: off (DDP), Megatron-FSDP's four strategies, FSDP2's two. */
export const fsdpSettingWords: readonly string[] = ['off', ...shardingStrategies, ...Object.keys(fsdp2Words)];

/**
 * `#fsdp=` read: 'off' → null (DDP); a --data-parallel-sharding-strategy → --use-megatron-fsdp with
 * it; 'fsdp2' / 'fsdp2-no-reshard' → --use-torch-fsdp2 with or without reshard after forward.
 */
export function parseFsdpSetting(text: string): FsdpSetup | null {
  if (text === 'off') return null;
  if ((shardingStrategies as readonly string[]).includes(text))
    return { impl: 'megatron', strategy: text as ShardingStrategy };
  if (text === 'fsdp2' || text === 'fsdp2-no-reshard') return { impl: 'torch', reshardAfterForward: fsdp2Words[text] };
  throw new Error(`fsdp must be one of ${fsdpSettingWords.join(', ')}, got ${quoted(text)}.`);
}

/** The inverse of parseFsdpSetting. */
export function formatFsdpSetting(f: FsdpSetup | null): string {
  if (f === null) return 'off';
  if (f.impl === 'megatron') return f.strategy;
  return f.reshardAfterForward ? 'fsdp2' : 'fsdp2-no-reshard';
}
