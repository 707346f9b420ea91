// A slowed rank (#slow=r:f): every op's kernels dispatched f times on the rank's own GPUDevice.
import type { GpuTensor } from '../kernels/tensor.ts';
import type { OpSpec } from '../parallel/backend.ts';
import type { GpuBackend } from './backend-gpu.ts';

const isTensor = (a: unknown): a is GpuTensor =>
  typeof a === 'object' && a !== null && 'buffer' in a && 'shape' in a && 'name' in a;
const isOpSpec = (a: unknown): a is OpSpec =>
  typeof a === 'object' && a !== null && typeof (a as { label?: unknown }).label === 'string' && 'split' in a;

/**
 * `be` with every op (a backend method whose first argument is its OpSpec) run `factor` times:
 * factor − 1 dispatches of the same kernels with the same shapes, grid and arguments on zero-filled
 * stand-in tensors, then the real one (one per distinct tensor of the call, kept for the step and freed
 * with the backend's own), so the result is untouched — accumulating kernels (acc += b) included —
 * while the rank's GPU does f× the work. All dispatches belong to the one op, so a profiler times
 * them together. factor 1 returns `be` itself.
 */
export function slowedBackend(be: GpuBackend, factor: number): GpuBackend {
  if (!(Number.isInteger(factor) && factor >= 1))
    throw new Error(`slowedBackend: factor ${factor} must be a whole number ≥ 1.`);
  if (factor === 1) return be;
  const standIns = new Map<string, GpuTensor[]>();
  const substitute = (args: readonly unknown[]): unknown[] => {
    const taken = new Map<string, number>();
    const mapped = new Map<GpuTensor, GpuTensor>();
    const sub = (a: unknown): unknown => {
      if (Array.isArray(a)) return a.map(sub);
      if (!isTensor(a)) return a;
      let s = mapped.get(a);
      if (!s) {
        const key = a.shape.join('x');
        const k = taken.get(key) ?? 0;
        taken.set(key, k + 1);
        let list = standIns.get(key);
        if (!list) standIns.set(key, (list = []));
        list[k] ??= be.tensor(`stand-in ${key} #${k}`, a.shape);
        s = list[k];
        mapped.set(a, s);
      }
      return s;
    };
    return args.map(sub);
  };
  return new Proxy(be, {
    get(target, prop) {
      const v: unknown = Reflect.get(target, prop, target);
      if (typeof v !== 'function') return v;
      const method = v as (...args: unknown[]) => unknown;
      return (...args: unknown[]): unknown => {
        const op = args[0];
        if (!isOpSpec(op)) return method.apply(target, args);
        const k = target.ctx;
        return k.op(op.label, () => {
          // The stand-ins first, the real dispatch last: a profiler (GpuTimer) times an op from its
          // first pass's beginning to its last pass's end, so only those two need its timestamps;
          // the passes between are hidden from it (a step's timed passes then stay within its capacity).
          const extra = substitute(args);
          method.apply(target, extra);
          const observer = k.observer;
          k.observer = undefined;
          try {
            for (let i = 2; i < factor; i++) method.apply(target, extra);
          } finally {
            k.observer = observer;
          }
          return method.apply(target, args);
        });
      };
    },
  });
}
