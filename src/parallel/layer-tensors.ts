import type { SafetensorsEntry } from '../core/safetensors.ts';
import type { LayerConfig } from './config.ts';
import type { LogicalOutput } from './gather.ts';
import type { StepInputs } from './layer.ts';
import { logicalShape, logicalWeight, weightsOf } from './weights.ts';

/**
 * Every logical tensor of one step, named for a reader in PyTorch: weight.<p> (the seeded logical
 * parameters, stored [in, out] so Y = X·W), input.ids / input.targets [s, b] (int64) or input.x /
 * input.dy [s, b, h], output.y [s, b, h], output.loss [s, b] (per token), output.dx [s, b, h]
 * (without a vocabulary) and grad.<p> for every parameter (of the mean token loss, or of Σ y·dy).
 */
export function layerTensors(c: LayerConfig, inputs: StepInputs, out: LogicalOutput): SafetensorsEntry[] {
  const tokens = [c.s, c.b];
  const act = [c.s, c.b, c.h];
  const ids = (a: ArrayLike<number>) => BigInt64Array.from(Array.from(a, (v) => BigInt(v)));
  const f32 = (a: ArrayLike<number>) => (a instanceof Float32Array ? a : Float32Array.from(a));
  const entries: SafetensorsEntry[] = weightsOf(c).map((p) => ({
    name: `weight.${p}`,
    shape: logicalShape(c, p),
    data: logicalWeight(c, p),
  }));
  if (inputs.ids) entries.push({ name: 'input.ids', shape: tokens, data: ids(inputs.ids) });
  if (inputs.targets) entries.push({ name: 'input.targets', shape: tokens, data: ids(inputs.targets) });
  if (inputs.x) entries.push({ name: 'input.x', shape: act, data: f32(inputs.x) });
  if (inputs.dy) entries.push({ name: 'input.dy', shape: act, data: f32(inputs.dy) });
  entries.push({ name: 'output.y', shape: act, data: out.y });
  if (out.loss) entries.push({ name: 'output.loss', shape: tokens, data: out.loss });
  if (out.dx) entries.push({ name: 'output.dx', shape: act, data: out.dx });
  for (const p of weightsOf(c)) {
    const g = out.grads[p];
    if (!g) throw new Error(`layerTensors: the run returned no gradient for ${p}.`);
    entries.push({ name: `grad.${p}`, shape: logicalShape(c, p), data: g });
  }
  return entries;
}

/** The config and the layouts a reader needs, as safetensors metadata (strings). */
export function layerTensorsMetadata(c: LayerConfig): Record<string, string> {
  const d = c.h / c.heads;
  return {
    config: JSON.stringify(c),
    layout: 'activations [s, b, h]; weights [in, out] (Y = X·W)',
    'weight.wqkv': `columns [Q heads 0..${c.heads - 1} | K groups 0..${c.groups - 1} | V groups 0..${c.groups - 1}], ${d} each; query head z uses KV group ⌊z·groups/heads⌋; Megatron-Core's linear_qkv orders the same columns per group, [q heads of group g | k_g | v_g] for g = 0..${c.groups - 1}`,
    'weight.wfc1': `columns [gate | up], ${c.ffn} each; MLP = (silu(X·gate) ⊙ (X·up))·wdown`,
    norm: `RMSNorm y = x / sqrt(mean(x²) + ${c.eps}) · g; RoPE rotate-half, base ${c.ropeBase}, causal softmax`,
    loss:
      c.vocab > 0 ? 'grad.* of the mean over tokens of output.loss' : 'grad.* and output.dx of Σ output.y · input.dy',
  };
}
