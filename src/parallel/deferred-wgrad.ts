import type { KernelSpec } from '../reference/kernel-spec.ts';
import type { GemmProblem } from '../reference/gemm.ts';
import type { Backend, OpSpec } from './backend.ts';
import type { KernelName, OpPhase } from './plan-types.ts';

/** The weight-gradient ops one backward set aside and the releases of the tensors they read, in issue order. */
export interface DeferredWgrad {
  /** Issues them: ZB-H1's W pass of that backward. */
  run(): void;
  /** How many weight-gradient ops it holds. */
  readonly ops: number;
}

/**
 * A backend that, while `deferring`, sets aside every weight-gradient op — GEMMs with role
 * 'wgrad' (each linear's X^T·dY) and kernels whose spec or op is 'wgrad' (the RMSNorm gains',
 * the embedding's) — and every release, so that one backward splits into ZB-H1's B (the input
 * gradient: what the previous stage waits for) and W (Qi et al. 2023, §2: W = the weight gradients,
 * which nothing downstream reads). The release of a tensor a set-aside op reads or writes waits for
 * W (it is replayed after that op, in order); every other release happens at once, so a backward
 * waiting for its W holds what W needs and no more: W's inputs (the layers' inputs and output
 * gradients, accounting/wgrad-inputs.ts) and the gradient buffers it writes. No op of B reads a
 * weight gradient (they are written only), so B's results are those of the whole backward.
 */
export class DeferringBackend<T> implements Backend<T> {
  private held: (() => void)[] | undefined;
  private heldOps = 0;
  /** The tensors the set-aside ops touch: their releases wait for W. */
  private readonly touched = new Set<T>();

  constructor(readonly inner: Backend<T>) {}

  get kind(): Backend<T>['kind'] {
    return this.inner.kind;
  }
  get phase(): OpPhase {
    return this.inner.phase;
  }
  set phase(p: OpPhase) {
    this.inner.phase = p;
  }

  /** Starts setting weight-gradient ops aside. */
  defer(): void {
    if (this.held) throw new Error('DeferringBackend: already deferring.');
    this.held = [];
    this.heldOps = 0;
    this.touched.clear();
  }

  /** Stops, returning what was set aside since defer(). */
  take(): DeferredWgrad {
    const held = this.held;
    if (!held) throw new Error('DeferringBackend: take() without defer().');
    const ops = this.heldOps;
    this.held = undefined;
    this.touched.clear();
    return { ops, run: () => held.forEach((f) => f()) };
  }

  tensor(name: string, shape: readonly number[], data?: Float32Array | Float64Array): T {
    return this.inner.tensor(name, shape, data);
  }
  shapeOf(t: T): readonly number[] {
    return this.inner.shapeOf(t);
  }
  read(t: T): Promise<Float32Array> {
    return this.inner.read(t);
  }
  release(t: T): void {
    if (this.held && this.touched.has(t)) this.held.push(() => this.inner.release(t));
    else this.inner.release(t);
  }
  kernel<A>(op: OpSpec, spec: KernelSpec<KernelName, A>, tensors: readonly T[], args: A): void {
    if (this.held && (spec.role === 'wgrad' || op.role === 'wgrad')) {
      const phase = this.inner.phase;
      this.heldOps++;
      for (const t of tensors) this.touched.add(t);
      this.held.push(() => {
        this.inner.phase = phase;
        this.inner.kernel(op, spec, tensors, args);
      });
    } else this.inner.kernel(op, spec, tensors, args);
  }
  gemm(op: OpSpec, p: GemmProblem, a: T, b: T, c: T): void {
    if (this.held && op.role === 'wgrad') {
      const phase = this.inner.phase;
      this.heldOps++;
      for (const t of [a, b, c]) this.touched.add(t);
      this.held.push(() => {
        this.inner.phase = phase;
        this.inner.gemm(op, p, a, b, c);
      });
    } else this.inner.gemm(op, p, a, b, c);
  }
  flush(): Promise<void> {
    return this.inner.flush();
  }
}
