import { describe, expect, test } from 'vitest';
import { activationTerms } from '../../../src/accounting/activations.ts';
import { gpuMemory } from '../../../src/accounting/training-memory.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { makePlan } from '../../../src/parallel/plan.ts';

describe('full recompute: activation memory at the backward peak', () => {
  // Megatron's CheckpointFunction (tensor_parallel/random.py:618, :645 at core_v0.19.0) saves each
  // layer's input and, in backward, re-runs the layer on detach_variable(inputs): a new tensor on the
  // same storage, so the recomputed block's norm1 input IS its checkpoint. At the last layer's
  // backward the live set is L − 1 other checkpoints + that block's full set (its input included)
  // + the output layer and loss: full + (L − 1)·checkpoint, every one of the L checkpoints counted.
  test.each([false, true])(
    'llama-gqa at t = 2, SP %s, L = 6: full + 5 checkpoints, the recomputed block’s own input among full’s terms',
    async (sp) => {
      const c = configFromPreset('llama-gqa', { tp: 2, sp });
      const full = (await makePlan(c)).plan;
      const block = (await makePlan({ ...c, vocab: 0 })).plan;
      const layers = 6;
      const m = gpuMemory(full, block, layers, 'fp32', 80, true);
      const sl = sp ? c.s / c.tp : c.s;
      const checkpoint = sl * c.b * c.h * 4;
      const fullBytes = activationTerms(full, 0, 'heads').reduce((a, x) => a + x.bytes, 0);
      expect(m.activationBytes).toBe(fullBytes + (layers - 1) * checkpoint);
      // The recomputed block's input (norm1's saved input) is one checkpoint in size: L in all.
      const input = activationTerms(full, 0, 'heads').find((x) => x.op === 'norm1' && x.tensor === 'input')!;
      expect(input.bytes).toBe(checkpoint);
    },
  );
});
