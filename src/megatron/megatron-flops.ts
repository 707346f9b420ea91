/** What Megatron-LM's FLOP count of an iteration reads (its args of the same names). */
export interface FlopsArgs {
  readonly globalBatch: number;
  readonly s: number;
  readonly layers: number;
  readonly h: number;
  readonly heads: number;
  readonly groups: number;
  readonly ffn: number;
  readonly vocab: number;
  readonly swiglu: boolean;
}

/**
 * FLOPs of one iteration as Megatron-LM's training.py `num_floating_point_operations` counted them
 * in mid-2024 (tag core_r0.8.0), the count behind the README's H100 per-GPU teraFLOP/s (dense,
 * kv_channels = h / heads):
 *   12 · B · s · L · h² · ((1 + g/a + s/h) + (ffn/h) · (3/2 if SwiGLU) + V / (2 · L · h))
 * Model FLOPs: forward and backward, no recomputation; attention scores counted unmasked.
 */
export function megatronFlops(a: FlopsArgs): number {
  const attention = 1 + a.groups / a.heads + a.s / a.h;
  const mlp = (a.ffn / a.h) * (a.swiglu ? 1.5 : 1);
  const logit = a.vocab / (2 * a.layers * a.h);
  return 12 * a.globalBatch * a.s * a.layers * a.h * a.h * (attention + mlp + logit);
}
