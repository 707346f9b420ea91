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
