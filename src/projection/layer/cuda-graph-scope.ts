// Which of a layer plan's ops a --cuda-graph-modules scope captures, read at Megatron-LM
// core_v0.19.0 (megatron/core/transformer/transformer_layer.py) for transformer_engine.
import type { CudaGraphModule } from '../../megatron/cuda-graph-rules.ts';
import type { LayerPlan } from '../../parallel/plan-types.ts';
import type { WeightName } from '../../parallel/weight-names.ts';

/** The scopes the projection prices in dense layers (attn, mlp); the empty scope is the whole layer. */
export const pricedGraphScopes: readonly CudaGraphModule[] = ['attn', 'mlp'];
/** The scopes it prices where every layer is MoE (attn, moe). */
export const pricedMoeGraphScopes: readonly CudaGraphModule[] = ['attn', 'moe'];

/**
 * Per op of `plan` (by op index), whether the graphs of `scope` replay it. The empty scope
 * captures every op (the whole layer, as the projection prices it: cuda_graph_config.py:39-41).
 * A partial scope captures, per pass (TransformerLayer._get_submodules_under_cudagraphs,
 * transformer_layer.py:1110-1136; _te_cuda_graph_capture, :1138-1193):
 *   attn: _forward_attention — the input norm (the op with gain g1) through its residual add (the
 *         first `add` after it), the SP gather, QKV, RoPE, core attention, proj and TP reduce
 *         inside; backward, the ops after the pre-MLP norm's last (g2) op through the input
 *         norm's last (g1) op;
 *   mlp:  _forward_mlp — the pre-MLP norm (g2) through the closing residual add; backward, the
 *         ops after the output layer's last (wout) op, if any, through the pre-MLP norm's last
 *         (g2) op.
 *   moe:  in a MoE layer the same submodules, the pre-MLP norm and the whole MoELayer
 *         (:1124-1127, `self.is_moe_layer and CudaGraphModule.moe in ...`): the MLP span of the
 *         plan a MoE layer replaces (moe-step.ts denseMlpSpan), with the norm and residual add.
 *         The MoE terms themselves carry no launch cost in the projection, eager or graphed.
 * The embedding and the output layer stay eager (they are not TransformerLayer submodules).
 */
export function capturedOps(plan: LayerPlan, scope: readonly CudaGraphModule[]): boolean[] {
  const captured = new Array<boolean>(plan.ops.length).fill(!scope.length);
  if (!scope.length) return captured;
  const fwd = plan.ops.filter((o) => o.phase === 'forward');
  const bwd = plan.ops.filter((o) => o.phase === 'backward');
  const addAfter = (from: number): number =>
    fwd.findIndex((o, i) => i > from && o.kind === 'kernel' && o.kernel === 'add');
  const mark = (ops: typeof fwd, from: number, to: number): void => {
    for (const o of ops.slice(from, to + 1)) captured[o.index] = true;
  };
  const g1 = fwd.findIndex((o) => o.weight === 'g1');
  const g2 = fwd.findIndex((o) => o.weight === 'g2');
  const lastOf = (w: WeightName): number => bwd.map((o) => o.weight).lastIndexOf(w);
  if (scope.includes('attn')) {
    mark(fwd, g1, addAfter(g1));
    mark(bwd, lastOf('g2') + 1, lastOf('g1'));
  }
  if (scope.includes('mlp') || scope.includes('moe')) {
    mark(fwd, g2, addAfter(g2));
    mark(bwd, lastOf('wout') + 1, lastOf('g2'));
  }
  return captured;
}
