import { quoted } from '../core/quote.ts';
/**
 * The number format of a projected training run: compute, communication payloads and memory.
 * The WebGPU run on the page is always float32; this is the format the projection assumes the
 * real cluster trains in (Megatron-LM --fp16, --bf16, or neither).
 */
export type TrainDtype = 'fp16' | 'bf16' | 'fp32';

/** Every dtype, in display order (fp16 first: the seeds' V100 runs). */
export const trainDtypes: readonly TrainDtype[] = ['fp16', 'bf16', 'fp32'];

/** Bytes per element of activations, weights and TP payloads in that format. */
export const dtypeBytes: Readonly<Record<TrainDtype, number>> = { fp16: 2, bf16: 2, fp32: 4 };

/** The dtype named by `text`, or an error listing the accepted names. */
export function parseDtype(text: string): TrainDtype {
  if ((trainDtypes as readonly string[]).includes(text)) return text as TrainDtype;
  throw new Error(`unknown dtype ${quoted(text)}: use ${trainDtypes.join(', ')}.`);
}
