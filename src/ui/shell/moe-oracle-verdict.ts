// The top card's oracle badge with experts set: the MoE run's own check against one device (the
// float64 layer and block, src/parallel/moe-layer-oracle.ts and moe-oracle.ts), read from the run.
import type { MoeOracleCheck } from '../../parallel/moe-oracle.ts';
import type { MoeLayerRun } from '../../session/moe-layer-run.ts';
import type { MoeRun } from '../../session/moe-run.ts';

/** The MoE run's verdict against one device, as the badge says it. */
export interface MoeOracleVerdict {
  /** The run's own verdict (MoeLayerOracleReport.ok for the layer, MoeOracleReport.ok for the block alone). */
  readonly pass: boolean;
  /** What was checked: the layer with its MoE block, or the block alone (the M036 demonstration). */
  readonly scope: 'layer' | 'block';
  /** Every compared quantity: the layer's (y, dx, the block's input, the attention's gradients), then the block's. */
  readonly checks: readonly MoeOracleCheck[];
  /** The check with the largest |error| / tolerance. */
  readonly worst: MoeOracleCheck;
  /** worst.worst / worst.tolerance: < 1 is within the tolerance. */
  readonly ratio: number;
  /** Every failure in the run's words, a routing mismatch included (no check of its own); empty when it passes. */
  readonly failures: readonly string[];
}

/** |error| / tolerance of a check (Infinity at a zero tolerance, as the dense badge's ratio). */
export const checkRatio = (c: MoeOracleCheck): number => (c.tolerance > 0 ? c.worst / c.tolerance : Infinity);

/** The verdict of `run` from its reports (nothing is compared again); null when it made no check. */
export function moeOracleVerdict(run: MoeRun | MoeLayerRun): MoeOracleVerdict | null {
  const layer = 'layerOracle' in run ? run.layerOracle : null;
  const checks = layer ? [...layer.checks, ...layer.moe.checks] : run.oracle.checks;
  if (checks.length === 0) return null;
  const worst = checks.reduce((w, c) => (checkRatio(c) > checkRatio(w) ? c : w));
  return {
    pass: layer ? layer.ok : run.oracle.ok,
    scope: layer ? 'layer' : 'block',
    checks,
    worst,
    ratio: checkRatio(worst),
    failures: layer ? layer.failures : run.oracle.failures,
  };
}
