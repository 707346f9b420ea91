import type { MoeConfig } from '../reference/moe/config.ts';
import { auxLossArgs, moeAuxLossKernel, moeZLossKernel, zLossArgs } from '../reference/moe/router-loss.ts';
import { opSpec, type Backend } from './backend.ts';

// The router's aux and z losses of one rank's tokens on the backend (kernels moeAuxLoss, moeZLoss;
// formulas in src/reference/moe/router-loss.ts), given the group's per-expert counts c_e [E] and
// token count T_g (summed over every rank's distinct tokens by the caller): this rank's share of
// each loss (its rows [T] read back and summed in float64) and the gradient tensors [T, E] to add
// into the router's logits gradient. A loss that is off (aux coefficient 0, z coefficient None)
// runs no kernel and is 0.

/** A rank's shares of the aux and z losses, and their logits gradients on the backend. */
export interface RouterLosses<T> {
  readonly aux: number;
  readonly z: number;
  /** ∂aux/∂logits and ∂z/∂logits [T, E], those of the losses that are on. */
  readonly grads: readonly T[];
}

/** Σ v in float64. */
function sum(v: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]!;
  return s;
}

/** The losses of `logits` [T, E] (the router's, skew added) for a group with `counts` [E] and `tokens` tokens. */
export async function routerLosses<T>(
  be: Backend<T>,
  c: MoeConfig,
  logits: T,
  group: { readonly counts: ArrayLike<number>; readonly tokens: number },
): Promise<RouterLosses<T>> {
  const [T, E] = be.shapeOf(logits);
  const grads: T[] = [];
  const op = (label: string) => opSpec(label, 'replicated', { megatron: 'TopKRouter' });
  let aux = 0;
  let z = 0;
  const auxArgs = T === 0 ? null : auxLossArgs(c, group.tokens);
  if (auxArgs !== null) {
    const rows = be.tensor('moe.aux.rows', [T]);
    const d = be.tensor('d.moe.logits.aux', [T, E]);
    const counts = be.tensor('moe.aux.group.counts', [E], Float64Array.from(group.counts));
    be.kernel(op('moe.aux.loss'), moeAuxLossKernel, [logits, counts, rows, d], auxArgs);
    aux = sum(await be.read(rows));
    grads.push(d);
  }
  const zArgs = T === 0 ? null : zLossArgs(c, group.tokens);
  if (zArgs !== null) {
    const rows = be.tensor('moe.z.rows', [T]);
    const d = be.tensor('d.moe.logits.z', [T, E]);
    be.kernel(op('moe.z.loss'), moeZLossKernel, [logits, rows, d], zArgs);
    z = sum(await be.read(rows));
    grads.push(d);
  }
  return { aux, z, grads };
}
