import { copyColsKernel } from '../reference/copy-cols.ts';
import { moeGroupedGemmKernel, moeGroupedGemmWgradKernel } from '../reference/moe/grouped-gemm.ts';
import { swigluBackwardKernel, swigluKernel } from '../reference/swiglu.ts';
import { opSpec, type Backend } from './backend.ts';

// The routed experts on one rank, on any backend (Megatron-Core core_v0.19.0 experts.py
// TEGroupedMLP): N permuted rows grouped by local expert (offsets [E + 1]), each expert a SwiGLU
// MLP, fc1 [E, h, 2f] (gate columns [0, f), up [f, 2f)), fc2 [E, f, h]:
//   H = xp · fc1_e (one grouped GEMM)  →  g, u = H[:, :f], H[:, f:]  →  a = silu(g) ⊙ u  →  yp = a · fc2_e
// The router, the permutation and the combine are the caller's (src/reference/moe/): under expert
// parallelism the all-to-all sits between the permute and these GEMMs.

/** What the experts' backward reads of their forward. */
export interface MoeExpertsSaved<T> {
  readonly xp: T;
  readonly gate: T;
  readonly up: T;
  readonly act: T;
}

const op = (label: string) => opSpec(label, 'replicated', { megatron: 'TEGroupedMLP' });

/** Forward: xp [N, h] → yp [N, h] through every local expert's SwiGLU MLP. */
export function moeExpertsForward<T>(
  be: Backend<T>,
  xp: T,
  fc1: T,
  fc2: T,
  offsets: T,
  f: number,
): { yp: T; saved: MoeExpertsSaved<T> } {
  const [N, h] = be.shapeOf(xp);
  const H = be.tensor('moe.fc1', [N, 2 * f]);
  be.kernel(op('moe.fc1'), moeGroupedGemmKernel, [xp, fc1, offsets, H], { transB: false });
  const gate = be.tensor('moe.gate', [N, f]);
  const up = be.tensor('moe.up', [N, f]);
  be.kernel(op('moe.fc1.gate'), copyColsKernel, [H, gate], {
    rows: N,
    n: f,
    from: { w: 2 * f, c0: 0 },
    to: { w: f, c0: 0 },
  });
  be.kernel(op('moe.fc1.up'), copyColsKernel, [H, up], {
    rows: N,
    n: f,
    from: { w: 2 * f, c0: f },
    to: { w: f, c0: 0 },
  });
  be.release(H);
  const act = be.tensor('moe.act', [N, f]);
  be.kernel(op('moe.swiglu'), swigluKernel, [gate, up, act], {});
  const yp = be.tensor('moe.fc2', [N, h]);
  be.kernel(op('moe.fc2'), moeGroupedGemmKernel, [act, fc2, offsets, yp], { transB: false });
  return { yp, saved: { xp, gate, up, act } };
}

/**
 * Backward: dyp [N, h] → dxp [N, h]; writes dfc1 [E, h, 2f] and dfc2 [E, f, h] (overwritten, not
 * accumulated).
 */
export function moeExpertsBackward<T>(
  be: Backend<T>,
  dyp: T,
  saved: MoeExpertsSaved<T>,
  fc1: T,
  fc2: T,
  offsets: T,
  dfc1: T,
  dfc2: T,
): T {
  const [N, h] = be.shapeOf(dyp);
  const [, f] = be.shapeOf(saved.act);
  be.kernel(op('moe.fc2.wgrad'), moeGroupedGemmWgradKernel, [saved.act, dyp, offsets, dfc2], {});
  const dact = be.tensor('d.moe.act', [N, f]);
  be.kernel(op('moe.fc2.dgrad'), moeGroupedGemmKernel, [dyp, fc2, offsets, dact], { transB: true });
  const dgate = be.tensor('d.moe.gate', [N, f]);
  const dup = be.tensor('d.moe.up', [N, f]);
  be.kernel(op('moe.swiglu.backward'), swigluBackwardKernel, [saved.gate, saved.up, dact, dgate, dup], {});
  be.release(dact);
  const dH = be.tensor('d.moe.fc1', [N, 2 * f]);
  be.kernel(op('moe.fc1.gate.grad'), copyColsKernel, [dgate, dH], {
    rows: N,
    n: f,
    from: { w: f, c0: 0 },
    to: { w: 2 * f, c0: 0 },
  });
  be.kernel(op('moe.fc1.up.grad'), copyColsKernel, [dup, dH], {
    rows: N,
    n: f,
    from: { w: f, c0: 0 },
    to: { w: 2 * f, c0: f },
  });
  be.release(dgate);
  be.release(dup);
  be.kernel(op('moe.fc1.wgrad'), moeGroupedGemmWgradKernel, [saved.xp, dH, offsets, dfc1], {});
  const dxp = be.tensor('d.moe.in', [N, h]);
  be.kernel(op('moe.fc1.dgrad'), moeGroupedGemmKernel, [dH, fc1, offsets, dxp], { transB: true });
  be.release(dH);
  return dxp;
}
