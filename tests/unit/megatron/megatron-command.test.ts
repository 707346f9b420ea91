import { describe, expect, test } from 'vitest';
import { parseMegatronCommand, shellWords } from '../../../src/megatron/megatron-command.ts';
import { formatMegatronCommand, megatronLaunch } from '../../../src/megatron/megatron-args.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';

describe('reading a pasted Megatron-LM command', () => {
  test('shell words: quotes, continuations and VAR=value prefixes', () => {
    expect(shellWords(`A=1 torchrun --x "a b" \\\n  --y 'c d' --z=e\\ f`)).toEqual([
      'A=1',
      'torchrun',
      '--x',
      'a b',
      '--y',
      'c d',
      '--z=e f',
    ]);
  });

  test("the playground's own exported command reads back to its configuration", () => {
    const c = configFromPreset('llama-gqa', { tp: 4, sp: true });
    const p = parseMegatronCommand(formatMegatronCommand(megatronLaunch(c)));
    expect(p.setup).toEqual({
      sizes: { s: c.s, b: c.b, h: c.h, heads: c.heads, groups: c.groups, ffn: c.ffn, vocab: c.vocab },
      tp: 4,
      sp: true,
      layers: 1,
      gpus: 4,
      globalBatch: c.b,
      overlap: true,
      recompute: false,
    });
    expect(p.dtype).toBe('fp32');
    expect(p.defaulted).toEqual(['fp32 (no --bf16 or --fp16)']);
  });

  test('a multi-node bf16 job: GPUs from torchrun, the rest from the flags', () => {
    const p = parseMegatronCommand(
      'torchrun --nnodes 4 --nproc-per-node 8 pretrain_gpt.py --tensor-model-parallel-size 8 --num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --micro-batch-size 1 --global-batch-size 64 --bf16 --recompute-granularity full',
    );
    expect(p.setup).toMatchObject({ tp: 8, gpus: 32, layers: 32, globalBatch: 64, recompute: true, sp: false });
    expect(p.setup.sizes).toMatchObject({ ffn: 16384, groups: 32, vocab: 0 });
    expect(p.dtype).toBe('bf16');
    expect(p.defaulted).toContain('--ffn-hidden-size 16384');
  });

  test('FSDP flags reach the setup: Megatron-FSDP with its strategy, FSDP2 with or without resharding', () => {
    const cmd =
      'torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py --num-layers 8 --hidden-size 1024 --num-attention-heads 8 --seq-length 512 --micro-batch-size 1';
    expect(
      parseMegatronCommand(`${cmd} --use-megatron-fsdp --data-parallel-sharding-strategy optim_grads`).setup.fsdp,
    ).toEqual({
      impl: 'megatron',
      strategy: 'optim_grads',
    });
    expect(parseMegatronCommand(`${cmd} --use-torch-fsdp2 --torch-fsdp2-no-reshard-after-forward`).setup.fsdp).toEqual({
      impl: 'torch',
      reshardAfterForward: false,
    });
    expect(parseMegatronCommand(cmd).setup.fsdp).toBeUndefined();
  });

  test('what is missing or wrong is named', () => {
    expect(() => parseMegatronCommand('pretrain_gpt.py --hidden-size 1024 --seq-length 128')).toThrow(
      /no --num-attention-heads/,
    );
    expect(() => parseMegatronCommand('--hidden-size 1k --num-attention-heads 8 --seq-length 8')).toThrow(
      /--hidden-size must be a whole number ≥ 1, got "1k"/,
    );
    expect(() => parseMegatronCommand('python train.py')).toThrow(/no --flags found/);
    expect(() =>
      parseMegatronCommand('--hidden-size 8 --num-attention-heads 2 --seq-length 8 --pipeline-model-parallel-size 2'),
    ).toThrow(/tensor and data parallelism only/);
  });
});

describe("Megatron's defaults when a command leaves a size out (arguments.py at the pin)", () => {
  const base = '--hidden-size 4096 --num-attention-heads 32 --seq-length 2048 --num-layers 2';

  test('--swiglu without --ffn-hidden-size: int((4h·2/3)/64)·64, rounded down (h 4096 → 10880, not 11008)', () => {
    const p = parseMegatronCommand(`${base} --swiglu`);
    expect(p.setup.sizes.ffn).toBe(10880);
    expect(p.flags.layerArch).toBe('llama');
    // h = 1000: 8000/3 = 2666.7, /64 = 41.67 → 41·64 = 2624.
    expect(
      parseMegatronCommand('--hidden-size 1000 --num-attention-heads 8 --seq-length 8 --swiglu').setup.sizes.ffn,
    ).toBe(2624);
    expect(p.defaulted).toContain('--ffn-hidden-size 10880');
  });

  test('without --swiglu: GeLU MLP, FFN 4h, recorded as the GPT architecture', () => {
    const p = parseMegatronCommand(base);
    expect(p.setup.sizes.ffn).toBe(16384);
    expect(p.flags.layerArch).toBe('gpt');
    expect(p.flags.normalization).toBe('LayerNorm');
    expect(p.flags.bias).toBe(true);
    expect(p.flags.tiedEmbeddings).toBe(true);
    expect(p.flags.positionEmbedding).toBe('learned_absolute');
  });

  test('--num-query-groups counts only with --group-query-attention', () => {
    const alone = parseMegatronCommand(`${base} --num-query-groups 8`);
    expect(alone.setup.sizes.groups).toBe(32);
    expect(alone.defaulted.join(' ')).toContain('--num-query-groups counts only with --group-query-attention');
    expect(parseMegatronCommand(`${base} --group-query-attention --num-query-groups 8`).setup.sizes.groups).toBe(8);
  });

  test('vocabulary padded to a multiple of --make-vocab-size-divisible-by · t (default 128)', () => {
    // 50257 at t = 4: multiple 512 → ⌈50257/512⌉·512 = 99·512 = 50688.
    const p = parseMegatronCommand(`${base} --vocab-size 50257 --tensor-model-parallel-size 4`);
    expect(p.setup.sizes.vocab).toBe(50688);
    expect(p.flags).toMatchObject({ vocabSize: 50257, makeVocabSizeDivisibleBy: 128, paddedVocab: 50688 });
    // t = 1: 50304 (GPT-2's 50257 padded to 128), the figure every Megatron GPT-2 log prints.
    expect(parseMegatronCommand(`${base} --vocab-size 50257`).setup.sizes.vocab).toBe(50304);
    expect(
      parseMegatronCommand(`${base} --vocab-size 50257 --make-vocab-size-divisible-by 1 --tensor-model-parallel-size 2`)
        .setup.sizes.vocab,
    ).toBe(50258);
    // GPT2BPETokenizer without --vocab-size: 50257 tokens.
    expect(parseMegatronCommand(`${base} --tokenizer-type GPT2BPETokenizer`).setup.sizes.vocab).toBe(50304);
  });

  test('the parallel and memory flags are recorded for the projection', () => {
    const p = parseMegatronCommand(
      `${base} --tensor-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather --tp-comm-overlap --recompute-granularity full --recompute-method uniform --recompute-num-layers 1`,
    );
    expect(p.flags).toMatchObject({
      tp: 2,
      pp: 1,
      vpp: 1,
      cp: 1,
      sp: true,
      distributedOptimizer: true,
      overlapGradReduce: true,
      overlapParamGather: true,
      tpCommOverlap: true,
      recompute: { granularity: 'full', method: 'uniform', numLayers: 1 },
    });
    expect(p.setup.recompute).toBe(true);
    expect(parseMegatronCommand(`${base} --recompute-activations`).flags.recompute.granularity).toBe('selective');
    expect(() => parseMegatronCommand(`${base} --context-parallel-size 2`)).toThrow(/context-parallel-size 2/);
  });
});
