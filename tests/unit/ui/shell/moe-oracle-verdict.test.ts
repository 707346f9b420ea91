// The top card's oracle badge with experts set reads the MoE run's own check against one device: the
// layer's checks and the block's, the worst by |error| / tolerance, the run's verdict and its failures.
import { describe, expect, test } from 'vitest';
import type { MoeOracleCheck, MoeOracleReport } from '../../../../src/parallel/moe-oracle.ts';
import type { MoeLayerOracleReport } from '../../../../src/parallel/moe-layer-oracle.ts';
import type { MoeLayerRun } from '../../../../src/session/moe-layer-run.ts';
import type { MoeRun } from '../../../../src/session/moe-run.ts';
import { moeOracleVerdict } from '../../../../src/ui/shell/moe-oracle-verdict.ts';

const check = (what: string, worst: number, tolerance: number): MoeOracleCheck => ({
  what,
  worst,
  at: 0,
  tolerance,
  ok: worst <= tolerance,
});
// as moeOracle reports: every failed check and every routing mismatch among the failures
const blockReport = (checks: MoeOracleCheck[], routing: string[] = []): MoeOracleReport => {
  const failures = [...checks.filter((c) => !c.ok).map((c) => c.what), ...routing];
  return {
    ok: failures.length === 0,
    tolerance: 1e-4,
    margin: 0.1,
    logitError: 1e-5,
    sameRouting: routing.length === 0,
    checks,
    failures,
  };
};
// only the reports are read
const blockRun = (oracle: MoeOracleReport) => ({ oracle }) as unknown as MoeRun;
const layerRun = (layerChecks: MoeOracleCheck[], moe: MoeOracleReport): MoeLayerRun => {
  const failures = [...layerChecks.filter((c) => !c.ok).map((c) => c.what), ...moe.failures];
  const layerOracle: MoeLayerOracleReport = {
    ok: failures.length === 0,
    tolerance: 1e-4,
    checks: layerChecks,
    moe,
    failures,
  };
  return { oracle: moe, layerOracle } as unknown as MoeLayerRun;
};

describe('moeOracleVerdict', () => {
  test('the layer run: the layer’s checks then the block’s, the worst by ratio to its own tolerance (not the largest error)', () => {
    const moe = blockReport([check('rank 0 dfc1 (experts 0…1)', 2e-5, 1e-4), check('rank 0 aux', 1e-9, 1e-4)]);
    const v = moeOracleVerdict(layerRun([check('rank 0 y', 3e-4, 1e-3), check('rank 0 dwqkv', 1e-6, 1e-4)], moe))!;
    expect(v.scope).toBe('layer');
    expect(v.pass).toBe(true);
    expect(v.checks.map((c) => c.what)).toEqual([
      'rank 0 y',
      'rank 0 dwqkv',
      'rank 0 dfc1 (experts 0…1)',
      'rank 0 aux',
    ]);
    expect(v.worst.what).toBe('rank 0 y'); // 0.3 of its tolerance; dfc1's 0.2
    expect(v.ratio).toBeCloseTo(0.3, 12);
    expect(v.failures).toEqual([]);
  });

  test('the block alone (M036): its checks; a routing mismatch fails the verdict though every check is within tolerance', () => {
    const v = moeOracleVerdict(
      blockRun(
        blockReport([check('rank 1 y', 5e-5, 1e-4)], ['rank 1 token 3 picks experts [2, 5], one device [2, 6]']),
      ),
    )!;
    expect(v.scope).toBe('block');
    expect(v.pass).toBe(false);
    expect(v.ratio).toBeCloseTo(0.5, 12);
    expect(v.failures).toEqual(['rank 1 token 3 picks experts [2, 5], one device [2, 6]']);
  });

  test('a check over its tolerance is the worst and fails the layer', () => {
    const v = moeOracleVerdict(
      layerRun([check('rank 0 dx', 1e-6, 1e-4)], blockReport([check('rank 2 dfc2', 3e-4, 1e-4)])),
    )!;
    expect(v.pass).toBe(false);
    expect(v.worst.what).toBe('rank 2 dfc2');
    expect(v.ratio).toBeCloseTo(3, 12);
  });

  test('a run without checks has no verdict', () => {
    expect(moeOracleVerdict(blockRun(blockReport([])))).toBeNull();
  });
});
