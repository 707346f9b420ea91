import { describe, expect, it } from 'vitest';
import { fsdpFlags, fsdpFromFlags, fsdpRefusals, fsdpSharding, type FsdpJob } from '../../../src/megatron/fsdp.ts';
import { checkDataParallelFlags } from '../../../src/megatron/training-setup.ts';

const job: FsdpJob = {
  pp: 1,
  ep: 1,
  distributedOptimizer: false,
  tiedEmbeddings: false,
  fp16: false,
  gradAccumulationFusion: false,
};
const sources = (j: Partial<FsdpJob>) =>
  fsdpRefusals({ impl: 'torch', reshardAfterForward: true }, { ...job, ...j }).map((r) => r.source);

describe('FSDP strategies: what each shards and when it communicates', () => {
  it('Megatron-FSDP no_shard … optim_grads_params is ZeRO-0 … ZeRO-3', () => {
    const z = (strategy: 'no_shard' | 'optim' | 'optim_grads' | 'optim_grads_params') =>
      fsdpSharding({ impl: 'megatron', strategy });
    expect(z('no_shard')).toEqual({
      optimizer: false,
      grads: false,
      params: false,
      gatherInBackward: false,
      gatherAfterStep: false,
    });
    expect(z('optim')).toMatchObject({ optimizer: true, grads: false, params: false, gatherAfterStep: true });
    expect(z('optim_grads')).toMatchObject({ optimizer: true, grads: true, params: false, gatherAfterStep: true });
    expect(z('optim_grads_params')).toMatchObject({
      optimizer: true,
      grads: true,
      params: true,
      gatherInBackward: true,
      gatherAfterStep: false,
    });
  });

  it('FSDP2 shards all three; without reshard_after_forward it gathers once per micro-batch', () => {
    expect(fsdpSharding({ impl: 'torch', reshardAfterForward: true }).gatherInBackward).toBe(true);
    expect(fsdpSharding({ impl: 'torch', reshardAfterForward: false })).toMatchObject({
      params: true,
      gatherInBackward: false,
    });
  });
});

describe("FSDP's flags as core_v0.19.0 spells them", () => {
  const read = (argv: Record<string, string | true>) => fsdpFromFlags((f) => argv[f]);

  it('reads --use-megatron-fsdp with its default strategy optim_grads_params, and FSDP2', () => {
    expect(read({ '--use-megatron-fsdp': true })).toEqual({ impl: 'megatron', strategy: 'optim_grads_params' });
    expect(read({ '--use-megatron-fsdp': true, '--data-parallel-sharding-strategy': 'optim' })).toEqual({
      impl: 'megatron',
      strategy: 'optim',
    });
    expect(read({ '--use-torch-fsdp2': true, '--torch-fsdp2-no-reshard-after-forward': true })).toEqual({
      impl: 'torch',
      reshardAfterForward: false,
    });
    expect(read({})).toBeUndefined();
  });

  it('refuses an unknown strategy and both implementations at once, saying what to write', () => {
    expect(() => read({ '--use-megatron-fsdp': true, '--data-parallel-sharding-strategy': 'zero3' })).toThrow(
      /use no_shard, optim, optim_grads, optim_grads_params/,
    );
    expect(() => read({ '--use-megatron-fsdp': true, '--use-torch-fsdp2': true })).toThrow(/give one/);
  });

  it('writes the flags back: Megatron-FSDP with the fsdp_dtensor checkpoint format it asserts', () => {
    expect(fsdpFlags({ impl: 'megatron', strategy: 'optim_grads' })).toEqual([
      '--use-megatron-fsdp',
      '--data-parallel-sharding-strategy',
      'optim_grads',
      '--ckpt-format',
      'fsdp_dtensor',
    ]);
    const back = fsdpFlags({ impl: 'torch', reshardAfterForward: false });
    expect(read(Object.fromEntries(back.map((f) => [f, true])))).toEqual({ impl: 'torch', reshardAfterForward: false });
  });
});

describe("Megatron's FSDP asserts (arguments.py, core_v0.19.0)", () => {
  it('a plain FSDP2 job passes; each FSDP2 rule fires alone with its line', () => {
    expect(sources({})).toEqual([]);
    const A = 'megatron/training/arguments.py';
    expect(sources({ pp: 2 })).toEqual([`${A}:1000-1001`]);
    expect(sources({ ep: 8 })).toEqual([`${A}:1002-1003`]);
    expect(sources({ distributedOptimizer: true })).toEqual([`${A}:1004-1005`]);
    expect(sources({ gradAccumulationFusion: true })).toEqual([`${A}:1006-1007`]);
    expect(sources({ tiedEmbeddings: true })).toEqual([`${A}:1010-1011`]);
    expect(sources({ fp16: true })).toEqual([`${A}:1012-1013`]);
    expect(sources({ cudaDeviceMaxConnections: '1' })).toEqual([`${A}:1014-1015`]);
  });

  it('Megatron-FSDP takes p > 1, EP and the distributed optimizer, not CUDA_DEVICE_MAX_CONNECTIONS=1', () => {
    const m = { impl: 'megatron', strategy: 'optim_grads_params' } as const;
    expect(fsdpRefusals(m, { ...job, pp: 4, ep: 8, distributedOptimizer: true, tiedEmbeddings: true })).toEqual([]);
    expect(fsdpRefusals(m, { ...job, cudaDeviceMaxConnections: '1' }).map((r) => r.source)).toEqual([
      'megatron/training/arguments.py:1143-1144',
    ]);
  });

  it('--overlap-param-gather takes Megatron-FSDP in place of the distributed optimizer (arguments.py:990-993)', () => {
    const s = { overlapParamGather: true, overlapGradReduce: true };
    expect(() => checkDataParallelFlags(s)).toThrow(/--use-distributed-optimizer or --use-megatron-fsdp/);
    expect(() =>
      checkDataParallelFlags({ ...s, fsdp: { impl: 'megatron', strategy: 'optim_grads_params' } }),
    ).not.toThrow();
    expect(() => checkDataParallelFlags({ ...s, fsdp: { impl: 'torch', reshardAfterForward: true } })).toThrow(
      /--use-distributed-optimizer or --use-megatron-fsdp/,
    );
  });
});
