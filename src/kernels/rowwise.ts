import { grid1d } from './grid.ts';
import type { ComputeLimits } from '../core/compute-limits.ts';

/** Largest workgroup a row kernel uses (WebGPU's default maxComputeInvocationsPerWorkgroup). */
export const maxRowLanes = 256;

/**
 * Lanes (a power of two, 1..256) of a kernel that reduces one row of `cols` values per
 * workgroup: about 8 values per lane, so short rows stay in few lanes (barriers are cheap-ish
 * there, notably on SwiftShader) and long rows spread over a full workgroup.
 */
export function rowLanes(cols: number): number {
  const want = Math.ceil(cols / 8);
  let lanes = 1;
  while (lanes < want && lanes < maxRowLanes) lanes *= 2;
  return lanes;
}

/**
 * Workgroup counts for one workgroup per row, folded into (x, y) like grid1d; the shader reads
 * its row as workgroup_id.x + workgroup_id.y · num_workgroups.x.
 */
export function rowGrid(
  limits: ComputeLimits,
  op: string,
  name: string,
  shape: readonly number[],
  rows: number,
): [number, number, number] {
  return grid1d(limits, op, name, shape, rows, 1);
}

/** Throws unless `value` is an integer in [min, max], naming the option. */
export function checkInteger(op: string, option: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${op}: option "${option}" is ${value}; it must be an integer in [${min}, ${max}].`);
  }
}
