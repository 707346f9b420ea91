/**
 * Context parallelism's attention exchange, Megatron's --cp-comm-type (arguments.py:3054-3059,
 * core_v0.19.0; one type for every layer here), which Megatron hands to Transformer Engine's
 * DotProductAttention (extensions/transformer_engine.py:1843-1882) and TE runs as
 * (transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py, TE v2.18):
 *
 * - `p2p`: the K, V ring (AttnFuncWithCPAndKVP2P), cp steps, each send under a block's compute.
 * - `a2a`: Ulysses-style all-to-alls (AttnFuncWithCPAndQKVOA2A): Q, K, V from [s/cp, h] to
 *   [s, h/cp] (:4336), attention over the whole sequence on h/cp heads, the output back (:4482);
 *   backward dO (:4674), then dQ, dK, dV (:4834). Needs the heads and KV heads per rank divisible
 *   by cp (:4243).
 * - `allgather`: K, V all-gathered (AttnFuncWithCPAndKVAllGather, :3213-3214), gathered again in
 *   backward (:3786-3787), dK, dV reduce-scattered (:4105-4106).
 * - `a2a+p2p`: hierarchical: an all-to-all over the inner group of
 *   --hierarchical-context-parallel-sizes, the ring over the outer (AttnFuncWithCPAndKVP2P with a
 *   cp_group pair, :1485-1500, :2034, :2411, :2895); Megatron asserts the sizes are given and
 *   multiply to cp (arguments.py:562-567).
 */
export type CpCommType = 'p2p' | 'a2a' | 'allgather' | 'a2a+p2p';

export const cpCommTypes: readonly CpCommType[] = ['p2p', 'a2a', 'allgather', 'a2a+p2p'];

/** How a context-parallel group of `cp` exchanges: its type, and for a2a+p2p the inner (all-to-all) and outer (ring) sizes. */
export interface CpExchange {
  readonly type: CpCommType;
  /** a2a+p2p: [inner a2a size, outer ring size], product cp (--hierarchical-context-parallel-sizes). */
  readonly hierarchical?: readonly [number, number];
}

/**
 * Megatron's and TE's refusals of `x` for cp ranks with `heads` query heads and `kvHeads` KV heads
 * per TP rank (the a2a groups split heads), each a sentence saying what to write instead; [] if legal.
 */
export function cpExchangeRefusals(x: CpExchange, cp: number, heads: number, kvHeads: number): string[] {
  const out: string[] = [];
  const a2aSize = x.type === 'a2a' ? cp : x.type === 'a2a+p2p' ? (x.hierarchical?.[0] ?? 0) : 1;
  if (x.type === 'a2a+p2p') {
    const h = x.hierarchical;
    if (!h || h[0] * h[1] !== cp)
      out.push(
        `--cp-comm-type a2a+p2p needs --hierarchical-context-parallel-sizes whose product is cp (${cp}), e.g. 2 ${cp / 2} (arguments.py:562-567).`,
      );
  } else if (x.hierarchical)
    out.push(`--hierarchical-context-parallel-sizes goes with --cp-comm-type a2a+p2p, not ${x.type}: drop it.`);
  if (a2aSize > 1 && (heads % a2aSize !== 0 || kvHeads % a2aSize !== 0))
    out.push(
      `--cp-comm-type ${x.type} splits each rank's heads over its all-to-all group of ${a2aSize}: the ${heads} query and ${kvHeads} KV heads per tensor-parallel rank must both be multiples of it (TE context_parallel.py: num_heads % cp_size == 0); use p2p or allgather, or a smaller group.`,
    );
  return out;
}
