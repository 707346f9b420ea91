import { checkWorkgroups } from './limits.ts';
import { type ComputeLimits } from '../core/compute-limits.ts';

/** Threads per workgroup of the 1-D kernels (elementwise, one row per thread, …). */
export const lanes = 64;

/**
 * Workgroup counts for `n` independent items at `perGroup` items per workgroup, folded into
 * (x, y) so large n stays under maxComputeWorkgroupsPerDimension; the shader recovers the item
 * index as gid.x + gid.y · (num_workgroups.x · workgroup size).
 */
export function grid1d(
  limits: ComputeLimits,
  op: string,
  name: string,
  shape: readonly number[],
  n: number,
  perGroup = lanes,
): [number, number, number] {
  const groups = Math.ceil(n / perGroup);
  const x = Math.min(groups, limits.maxComputeWorkgroupsPerDimension);
  const y = x === 0 ? 0 : Math.ceil(groups / x);
  const counts: [number, number, number] = [x, y, 1];
  checkWorkgroups(limits, op, name, shape, counts, ['x (items)', 'y (items folded)', 'z']);
  return counts;
}
