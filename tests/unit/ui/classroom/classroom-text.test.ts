import { describe, expect, test } from 'vitest';
import { classroomStepIds } from '../../../../src/parallel/classroom.ts';
import { configFromPreset } from '../../../../src/parallel/config.ts';
import { stepWords } from '../../../../src/ui/classroom/classroom-text.ts';

describe('the classroom steps’ words', () => {
  test('the titles number the steps in their order', () => {
    const c = configFromPreset('classroom', { tp: 2 });
    expect(classroomStepIds.map((id) => stepWords(id, c, true).title.split(' ')[0])).toEqual(
      classroomStepIds.map((_, i) => String(i + 1)),
    );
  });

  test('the sizes in the text are the config’s, and t = 1 says there is nothing to communicate', () => {
    const c = configFromPreset('classroom', { tp: 2 });
    expect(stepWords('split-w1', c, true).text).toContain(`[h, f/t] = [${c.h}, ${c.ffn / 2}]`);
    expect(stepWords('all-reduce', configFromPreset('classroom', { tp: 1 }), true).text).toContain(
      'At t = 1 there is nothing to communicate.',
    );
  });

  test('the attention step names the QKV all-gather only when KV groups < t', () => {
    const gathered = stepWords('attention', configFromPreset('classroom', { tp: 4 }), true); // 2 groups < 4
    const split = stepWords('attention', configFromPreset('classroom', { tp: 2 }), true);
    expect(gathered.title).toMatch(/QKV gathered$/);
    expect(gathered.megatron).toContain('all_gather_last_dim_from_tensor_parallel_region');
    expect(split.megatron).not.toContain('all_gather_last_dim_from_tensor_parallel_region');
  });

  test('the SP step says why it is empty when s % t ≠ 0', () => {
    expect(stepWords('sequence-parallel', configFromPreset('classroom', { tp: 2 }), false).text).toMatch(
      /^Sequence parallelism needs s % t = 0/,
    );
  });
});
