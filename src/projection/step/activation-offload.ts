import type { TrainDtype } from '../../hardware/dtype.ts';
import { dtypeBytes } from '../../hardware/dtype.ts';
import type { SystemSpec } from '../../hardware/systems.ts';
import type { ActivationOffload, OffloadModule } from '../../megatron/activation-offload.ts';
import { headDim } from '../../parallel/config.ts';
import type { LayerPlan } from '../../parallel/plan-types.ts';
import type { MoeStepModel } from './moe-step.ts';

/** One tensor a module offloads: its module, elements and bytes. */
export interface OffloadTensor {
  readonly module: OffloadModule;
  readonly elements: number;
  readonly bytes: number;
}

/**
 * The inputs each offloadable module saves for backward, per layer and micro-batch on one rank (the
 * activation table's terms, accounting/activations.ts): attn_norm the layer input [s/t or s, b, h]
 * and mlp_norm the pre-MLP norm's input — none under SP, where the norms are fused into the linear
 * after them (IdentityOp: the guide's "Skipped if using IdentityOp"); qkv_linear QKV's input
 * [s/t or s, b, h]; core_attn Q [s, b, n_q, d], K and V [s, b, n_kv, d] (K and V repeated to the
 * query heads without flash attention, dot_product_attention.py:169-175); attn_proj the context
 * [s, b, n_q·d]. In a MoE layer (moe-step.ts, r routed rows after the ETP gather): expert_fc1 the
 * experts' input [r, h], moe_act fc1's output [r, g·F_e/ETP] (g = 2 with SwiGLU).
 */
export function offloadTensors(
  block: LayerPlan,
  dtype: TrainDtype,
  flash: boolean,
  moe: MoeStepModel | undefined,
): { readonly dense: readonly OffloadTensor[]; readonly moe: readonly OffloadTensor[] } {
  const c = block.config;
  const own = block.ranks[0]!;
  const b = dtypeBytes[dtype];
  const sl = own.tokens[1] - own.tokens[0];
  const nq = own.heads[1] - own.heads[0];
  const nkv = flash ? own.kvGroups.length : nq;
  const d = headDim(c);
  const t = (module: OffloadModule, elements: number): OffloadTensor => ({ module, elements, bytes: elements * b });
  const fused = c.sp && c.tp > 1;
  const dense = [
    ...(fused ? [] : [t('attn_norm', sl * c.b * c.h)]),
    t('qkv_linear', sl * c.b * c.h),
    t('core_attn', c.s * c.b * nq * d),
    t('core_attn', c.s * c.b * nkv * d),
    t('core_attn', c.s * c.b * nkv * d),
    t('attn_proj', c.s * c.b * nq * d),
    ...(fused ? [] : [t('mlp_norm', sl * c.b * c.h)]),
  ];
  if (!moe) return { dense, moe: [] };
  const r = moe.compute.rows.computed;
  const f = moe.shapes.ffn / moe.shapes.etp;
  const g = moe.shapes.gated ? 2 : 1;
  return { dense, moe: [t('expert_fc1', r * moe.shapes.hidden), t('moe_act', r * g * f)] };
}

/** What offloading does per layer and micro-batch: bytes no longer kept, and the exposed copy time per pass. */
export interface LayerOffload {
  readonly bytes: number;
  readonly exposedForwardMs: number;
  readonly exposedBackwardMs: number;
}

/**
 * One layer's offload under `o` (Megatron's fine-grained offload manager, core_v0.19.0): the listed
 * modules' input tensors of at least min_offloaded_tensor_size elements, B bytes, times the offload
 * fraction f (the first f of the eligible groups in forward order: taken as f of the bytes), go to
 * pinned host memory on a side stream during the layer's forward (D2H) and come back before its
 * backward (H2D, prefetched while the layer after it runs its backward). Each direction moves
 * f·B over the GPU's host link (SystemSpec.host, per direction); it hides under the pass's compute
 * of the layer, so what shows is max(0, f·B/link − compute) per pass.
 */
export function layerOffload(
  tensors: readonly OffloadTensor[],
  o: ActivationOffload,
  system: SystemSpec,
  forwardMs: number,
  backwardMs: number,
): LayerOffload {
  const host = system.host;
  if (!host)
    throw new Error(
      `--fine-grained-activation-offloading: ${system.label} has no host link figure; choose a DGX or GB200 system.`,
    );
  const on = new Set(o.modules);
  const bytes =
    o.fraction * tensors.reduce((a, x) => a + (on.has(x.module) && x.elements >= o.minTensorElements ? x.bytes : 0), 0);
  const copyMs = bytes / (host.linkGBps * 1e6);
  return {
    bytes,
    exposedForwardMs: Math.max(0, copyMs - forwardMs),
    exposedBackwardMs: Math.max(0, copyMs - backwardMs),
  };
}
