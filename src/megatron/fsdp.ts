// Fully sharded data parallelism as Megatron-LM core_v0.19.0 runs it: Megatron-FSDP
// (--use-megatron-fsdp, --data-parallel-sharding-strategy) and PyTorch's FSDP2
// (--use-torch-fsdp2), their flags, what each shards and when it communicates, and the rules
// Megatron refuses them by, each with its source line at the tag.

/** --data-parallel-sharding-strategy (arguments.py:3023-3025; default optim_grads_params). */
export const shardingStrategies = ['no_shard', 'optim', 'optim_grads', 'optim_grads_params'] as const;
/** Megatron-FSDP's sharding: ZeRO-0 (DDP), ZeRO-1, ZeRO-2, ZeRO-3. */
export type ShardingStrategy = (typeof shardingStrategies)[number];

/**
 * An FSDP job: Megatron-FSDP with its strategy, or FSDP2 with reshard_after_forward (on unless
 * --torch-fsdp2-no-reshard-after-forward, arguments.py:3051-3053; training.py:1980-1982).
 */
export type FsdpSetup =
  | { readonly impl: 'megatron'; readonly strategy: ShardingStrategy }
  | { readonly impl: 'torch'; readonly reshardAfterForward: boolean };

/**
 * What an FSDP setup shards over the DP·cp group and when it communicates
 * (docs/user-guide/features/megatron_fsdp.md, "Data-Parallel Sharding Strategies", core_v0.19.0):
 *   optimizer  fp32 main weights and Adam moments sharded (all but no_shard).
 *   grads      gradients sharded: reduce-scattered per FSDP unit after every micro-batch's
 *              backward (ZeRO-2/3: "accumulated during every backward pass"; megatron_fsdp.py:1150-1161,
 *              no_sync: "For grads shard mode there will actually always be gradient sync happening";
 *              FSDP2's no_sync is the base class's no-op, data_parallel_base.py:25-32). Otherwise the
 *              gradient sync runs once, in the last micro-batch's backward, as DDP's.
 *   params     weights sharded: each FSDP unit (a TransformerLayer, mcore_fsdp_adapter.py:161-163)
 *              all-gathered before its forward and, resharded after it, again before its backward.
 *   gatherInBackward  the second all-gather (false for FSDP2 without reshard_after_forward: the
 *              gathered weights stay from forward to backward, ZeRO-2's memory in flight).
 *   gatherAfterStep  ZeRO-1/2 keep whole weights: the updated shards are all-gathered once after
 *              the optimizer, as the distributed optimizer's parameter gather.
 */
export interface FsdpSharding {
  readonly optimizer: boolean;
  readonly grads: boolean;
  readonly params: boolean;
  readonly gatherInBackward: boolean;
  readonly gatherAfterStep: boolean;
}

/** What `f` shards and when it communicates (FsdpSharding). */
export function fsdpSharding(f: FsdpSetup): FsdpSharding {
  if (f.impl === 'torch')
    return {
      optimizer: true,
      grads: true,
      params: true,
      gatherInBackward: f.reshardAfterForward,
      gatherAfterStep: false,
    };
  const level = shardingStrategies.indexOf(f.strategy);
  return {
    optimizer: level >= 1,
    grads: level >= 2,
    params: level >= 3,
    gatherInBackward: level >= 3,
    gatherAfterStep: level === 1 || level === 2,
  };
}

/**
 * The overlaps Megatron-FSDP turns on by itself (megatron_fsdp.py:328-333): the parameter gather
 * for optim_grads_params, the gradient reduce-scatter for optim_grads and optim_grads_params.
 * FSDP2 has no such flags (its prefetch is always on).
 */
export function fsdpForcedOverlaps(f: FsdpSetup | undefined): {
  overlapGradReduce: boolean;
  overlapParamGather: boolean;
} {
  if (f?.impl !== 'megatron') return { overlapGradReduce: false, overlapParamGather: false };
  return {
    overlapGradReduce: f.strategy === 'optim_grads' || f.strategy === 'optim_grads_params',
    overlapParamGather: f.strategy === 'optim_grads_params',
  };
}

/** The launch flags of `f` (Megatron-FSDP needs the fsdp_dtensor checkpoint format, arguments.py:1146-1147). */
export function fsdpFlags(f: FsdpSetup): string[] {
  if (f.impl === 'torch')
    return ['--use-torch-fsdp2', ...(f.reshardAfterForward ? [] : ['--torch-fsdp2-no-reshard-after-forward'])];
  return ['--use-megatron-fsdp', '--data-parallel-sharding-strategy', f.strategy, '--ckpt-format', 'fsdp_dtensor'];
}

/** What the FSDP rules read of a job. */
export interface FsdpJob {
  readonly pp: number;
  readonly ep: number;
  readonly distributedOptimizer: boolean;
  readonly tiedEmbeddings: boolean;
  readonly fp16: boolean;
  readonly gradAccumulationFusion: boolean;
  /** CUDA_DEVICE_MAX_CONNECTIONS as the job sets it (undefined: unset). */
  readonly cudaDeviceMaxConnections?: string;
}

/** One refusal: Megatron's source line and what to change. */
export interface FsdpRefusal {
  readonly source: string;
  readonly message: string;
}

const A = 'megatron/training/arguments.py';

/**
 * The rules Megatron-LM core_v0.19.0 refuses an FSDP job by (validate_args). Megatron-FSDP turns
 * --use-distributed-optimizer on by itself (arguments.py:1106-1111), so that is no refusal.
 */
export function fsdpRefusals(f: FsdpSetup, job: FsdpJob): FsdpRefusal[] {
  const out: FsdpRefusal[] = [];
  const no = (source: string, message: string): void => void out.push({ source, message });
  if (job.cudaDeviceMaxConnections === '1')
    no(
      f.impl === 'torch' ? `${A}:1014-1015` : `${A}:1143-1144`,
      'FSDP requires CUDA_DEVICE_MAX_CONNECTIONS > 1 or unset: leave it unset.',
    );
  if (f.impl === 'megatron') return out;
  if (job.pp > 1)
    no(
      `${A}:1000-1001`,
      '--use-torch-fsdp2 is not supported with pipeline parallelism: set p = 1 or use --use-megatron-fsdp.',
    );
  if (job.ep > 1)
    no(
      `${A}:1002-1003`,
      '--use-torch-fsdp2 is not supported with expert parallelism: set EP = 1 or use --use-megatron-fsdp.',
    );
  if (job.distributedOptimizer)
    no(
      `${A}:1004-1005`,
      "--use-torch-fsdp2 is not supported with MCore's distributed optimizer: drop --use-distributed-optimizer.",
    );
  if (job.gradAccumulationFusion)
    no(
      `${A}:1006-1007`,
      '--use-torch-fsdp2 is not supported with gradient accumulation fusion: give --no-gradient-accumulation-fusion.',
    );
  if (job.tiedEmbeddings) no(`${A}:1010-1011`, '--use-torch-fsdp2 requires --untie-embeddings-and-output-weights.');
  if (job.fp16) no(`${A}:1012-1013`, '--use-torch-fsdp2 not supported with fp16 yet: train in bf16.');
  return out;
}

/**
 * FSDP read from a launch line's flags, or undefined without --use-megatron-fsdp or
 * --use-torch-fsdp2; both at once, or a strategy Megatron does not list, throw.
 */
export function fsdpFromFlags(flag: (name: string) => string | true | undefined): FsdpSetup | undefined {
  const megatron = flag('--use-megatron-fsdp') !== undefined;
  const torch = flag('--use-torch-fsdp2') !== undefined;
  if (megatron && torch)
    throw new Error('--use-megatron-fsdp and --use-torch-fsdp2 are two FSDP implementations: give one.');
  if (torch)
    return { impl: 'torch', reshardAfterForward: flag('--torch-fsdp2-no-reshard-after-forward') === undefined };
  if (!megatron) return undefined;
  const s = flag('--data-parallel-sharding-strategy');
  const strategy = typeof s === 'string' ? s : 'optim_grads_params';
  if (!(shardingStrategies as readonly string[]).includes(strategy))
    throw new Error(`--data-parallel-sharding-strategy "${strategy}": use ${shardingStrategies.join(', ')}.`);
  return { impl: 'megatron', strategy: strategy as ShardingStrategy };
}

/** A short name of `f` for tables: "M-FSDP optim_grads_params", "FSDP2", "FSDP2 no-reshard". */
export const fsdpLabel = (f: FsdpSetup | undefined): string =>
  !f ? 'none' : f.impl === 'torch' ? (f.reshardAfterForward ? 'FSDP2' : 'FSDP2 no-reshard') : `M-FSDP ${f.strategy}`;
