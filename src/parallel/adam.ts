/**
 * AdamW (Loshchilov & Hutter 2019; torch.optim.AdamW, which Megatron-LM's default --optimizer adam
 * matches: apex FusedAdam with adam_w_mode, decoupled weight decay), one step on one parameter's
 * array, element by element in float64 and stored as float32 (Megatron keeps fp32 main parameters
 * and states). After k steps:
 *   m ← β1·m + (1 − β1)·g,  v ← β2·v + (1 − β2)·g²,  m̂ = m/(1 − β1^k),  v̂ = v/(1 − β2^k)
 *   w ← w − lr·(m̂/(√v̂ + ε) + λ·w)
 * Element-wise, so a TP rank stepping its shard with its shard's gradient steps its part of the
 * logical parameter exactly as one device would.
 */
export interface AdamConfig {
  readonly lr: number;
  /** --adam-beta1 (Megatron default 0.9). */
  readonly beta1: number;
  /** --adam-beta2 (default 0.999). */
  readonly beta2: number;
  /** --adam-eps (default 1e-8). */
  readonly eps: number;
  /** --weight-decay λ (default 0.01). */
  readonly weightDecay: number;
}

/** One parameter's optimizer state: first and second moments, steps taken. */
export interface AdamState {
  readonly m: Float32Array;
  readonly v: Float32Array;
  step: number;
}

/** A fresh state for a parameter of n elements. */
export const adamState = (n: number): AdamState => ({ m: new Float32Array(n), v: new Float32Array(n), step: 0 });

/** One AdamW step of w (in place) with gradient g. */
export function adamStep(w: Float32Array, g: Float32Array, s: AdamState, c: AdamConfig): void {
  if (w.length !== g.length || s.m.length !== w.length)
    throw new Error(`adamStep: parameter ${w.length}, gradient ${g.length} and state ${s.m.length} elements differ.`);
  s.step++;
  const c1 = 1 - c.beta1 ** s.step;
  const c2 = 1 - c.beta2 ** s.step;
  for (let i = 0; i < w.length; i++) {
    const gi = g[i]!;
    const m = (s.m[i] = c.beta1 * s.m[i]! + (1 - c.beta1) * gi);
    const v = (s.v[i] = c.beta2 * s.v[i]! + (1 - c.beta2) * gi * gi);
    const wi = w[i]!;
    w[i] = wi - c.lr * (m / c1 / (Math.sqrt(v / c2) + c.eps) + c.weightDecay * wi);
  }
}
