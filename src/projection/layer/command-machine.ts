// The machine a parsed Megatron command runs on, for projecting a job given as its command.
import type { SystemSpec } from '../../hardware/systems.ts';
import type { MegatronJobFlags, ParsedCommand } from '../../megatron/megatron-command.ts';
import { defaultKernelOptions, type KernelOptions } from './kernel-options.ts';
import type { Machine } from './projected-layer.ts';

/**
 * The kernel switches a parsed command states (megatron-command.ts): its layer (--swiglu: llama,
 * else gpt, with dropout) and --tp-comm-overlap (Megatron overlaps TP communication under
 * --sequence-parallel only); the others at defaultKernelOptions. Without them a GPT command would
 * be priced as the Llama layer.
 */
export const commandKernelOptions = (
  flags: Pick<MegatronJobFlags, 'layerArch' | 'tpCommOverlap' | 'sp'>,
): KernelOptions => ({
  ...defaultKernelOptions,
  layerArch: flags.layerArch,
  tpCommOverlap: flags.tpCommOverlap && flags.sp,
});

/** The command's training dtype and kernel switches on `system`. */
export const commandMachine = (parsed: ParsedCommand, system: SystemSpec): Machine => ({
  system,
  dtype: parsed.dtype,
  kernels: commandKernelOptions(parsed.flags),
});
