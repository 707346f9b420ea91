// `npm run project` with MoE flags: the parser, and the CLI as a user runs it.
import { describe, expect, it } from 'vitest';
import { parseProjectArgs } from '../../../scripts/project/project-args.ts';
import { moeLines, moeSummary } from '../../../scripts/project/moe-report.ts';
import { parseSystem } from '../../../src/hardware/systems.ts';
import { projectStep } from '../../../src/projection/step/cluster-projection.ts';
import { smallMoeJob } from '../../moe-fixtures.ts';
import { runCli } from './run-cli.ts';

const h100 = [
  '--system',
  'dgx-h100',
  '--dtype',
  'bf16',
  '--s',
  '2048',
  '--h',
  '2048',
  '--heads',
  '16',
  '--groups',
  '4',
];
const model = [
  ...h100,
  '--b',
  '1',
  '--ffn',
  '5632',
  '--vocab',
  '32000',
  '--layers',
  '4',
  '--gpus',
  '8',
  '--global-batch',
  '16',
];

describe('the MoE flags', () => {
  it("take Megatron's spellings and the short ones", () => {
    const a = parseProjectArgs([...model, '--experts', '64', '--topk', '8', '--ep', '8']);
    expect(a.setup.moe).toMatchObject({
      experts: 64,
      topk: 8,
      ep: 8,
      ffn: 5632,
      dispatcher: 'allgather',
      imbalance: 1,
    });
    const b = parseProjectArgs([
      ...model,
      '--num-experts',
      '16',
      '--moe-router-topk',
      '2',
      '--expert-model-parallel-size',
      '4',
      '--expert-tensor-parallel-size',
      '1',
      '--moe-ffn-hidden-size',
      '1408',
      '--moe-shared-expert-intermediate-size',
      '2816',
      '--moe-layer-freq',
      '([0]+[1]*3)',
      '--moe-token-dispatcher-type',
      'alltoall',
      '--moe-grouped-gemm',
      '--moe-expert-capacity-factor',
      '1.25',
      '--moe-shared-expert-overlap',
      '--moe-imbalance',
      '1.3',
    ]);
    expect(b.setup.moe).toMatchObject({
      experts: 16,
      topk: 2,
      ep: 4,
      etp: 1,
      ffn: 1408,
      sharedFfn: 2816,
      layerFreq: [0, 1, 1, 1],
      dispatcher: 'alltoall',
      groupedGemm: true,
      capacityFactor: 1.25,
      sharedExpertOverlap: true,
      imbalance: 1.3,
    });
  });
  it('take --moe-pad-expert-input-to-capacity', () => {
    const a = parseProjectArgs([
      ...model,
      '--experts',
      '8',
      '--moe-expert-capacity-factor',
      '1',
      '--moe-pad-expert-input-to-capacity',
    ]);
    expect(a.setup.moe).toMatchObject({ capacityFactor: 1, padToCapacity: true });
    expect(parseProjectArgs([...model, '--experts', '8']).setup.moe?.padToCapacity).toBeUndefined();
  });
  it('say where the rows are padded to capacity: cf 1.25 sends 1.25× the routed rows', async () => {
    const machine = { system: parseSystem('dgx-h100'), dtype: 'bf16' as const };
    const lines = async (padToCapacity: boolean) => {
      const m = moeSummary(await projectStep(smallMoeJob({ capacityFactor: 1.25, padToCapacity }), machine))!;
      return { m, first: moeLines(1, m)[0]! };
    };
    const [plain, padded] = [await lines(false), await lines(true)];
    expect(padded.m.paddedToCapacity).toBe(true);
    expect(padded.first).toContain('per local expert (padded to capacity)');
    expect(plain.first).not.toContain('padded');
    // s·b = 2048 tokens × top-2 routed; padded, each of the 8 experts takes ⌈2048·2/8 · 1.25⌉ = 640 rows.
    expect([plain.m.rowsSent, padded.m.rowsSent]).toEqual([4096, 5120]);
  });
  it('refuse a MoE flag without --num-experts, and both spellings of one setting', () => {
    expect(() => parseProjectArgs([...model, '--ep', '8'])).toThrow(/--ep is a MoE flag: give --num-experts/);
    expect(() => parseProjectArgs([...model, '--experts', '8', '--num-experts', '8'])).toThrow(/same setting/);
    expect(() => parseProjectArgs([...model, '--experts', '8', '--moe-token-dispatcher-type', 'nccl'])).toThrow(
      /--moe-token-dispatcher-type/,
    );
  });
  it('prints the MoE terms, and refuses a layout Megatron refuses with its reason', async () => {
    const r = await runCli(
      'scripts/project/project.ts',
      ...model,
      '--tp',
      '1',
      '--experts',
      '8',
      '--topk',
      '2',
      '--ep',
      '8',
      '--moe-token-dispatcher-type',
      'alltoall',
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/MoE at t=1: expert mesh ETP 1 × EP 8 × EDP 1/);
    expect(r.stdout).toMatch(/grouped GEMM rate: fc1/);
    expect(r.stdout).toMatch(/token exchange per direction: EP/);
    const bad = await runCli('scripts/project/project.ts', ...model, '--tp', '1', '--experts', '6', '--ep', '4');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /Number of experts should be a multiple of expert model parallel_size.*arguments.py:1602-1603/,
    );
  }, 60_000);
});
