import { describe, expect, test } from 'vitest';
import { cudaGraphFlags } from '../../../../src/megatron/cuda-graph-rules.ts';
import { clusterIssues } from '../../../../src/ui/settings/cluster-flags.ts';
import { defaultSettings, hashFromSettings, settingsFromHash } from '../../../../src/ui/settings/state.ts';

describe('the CUDA graph capture scope on the page (gscope, --cuda-graph-modules)', () => {
  test('round-trips through the hash; full (the whole layer) is the default and stays out of the link', () => {
    const { settings, messages } = settingsFromHash('#graphs=transformer_engine&gscope=attn,mlp');
    expect(messages).toEqual([]);
    expect(settings.gscope).toEqual(['attn', 'mlp']);
    expect(hashFromSettings(settings)).toContain('gscope=attn%2Cmlp');
    expect(settingsFromHash(hashFromSettings(settings)).settings.gscope).toEqual(['attn', 'mlp']);
    expect(settingsFromHash('#gscope=full').settings.gscope).toEqual([]);
    expect(hashFromSettings(defaultSettings)).not.toContain('gscope');
  });

  test("bad names get normalize_cuda_graph_modules' words, a long one cut", () => {
    const [bad] = settingsFromHash('#gscope=attn,nope').messages;
    expect(bad).toMatchObject({ key: 'gscope' });
    expect(bad!.message).toMatch(/--cuda-graph-modules "nope": .*enums.py:61-73.* Using gscope=full\./);
    expect(settingsFromHash('#gscope=full,attn').messages[0]!.message).toMatch(/cuda_graph_config.py:39-40/);
    const long = settingsFromHash(`#gscope=${'x'.repeat(10_000)}`).messages[0]!.message;
    expect(long.length).toBeLessThan(300);
  });

  test("Megatron's scope refusals and the unpriced scopes show at gscope; priced ones pass", () => {
    const te = { ...defaultSettings, system: 'dgx-h100', graphs: 'transformer_engine' as const };
    expect(clusterIssues({ ...te, gscope: ['attn'] })).toEqual([]);
    expect(clusterIssues({ ...te, gscope: ['attn', 'mlp'] })).toEqual([]);
    // The page's cluster model is dense (the seeds' scenario): moe is Megatron's refusal.
    const [moe] = clusterIssues({ ...te, gscope: ['moe'] });
    expect(moe).toMatchObject({ field: 'gscope' });
    expect(moe!.message).toMatch(/moe cuda graph is only supported for MoE\. .*2492-2496/);
    const [local] = clusterIssues({ ...te, graphs: 'local', gscope: ['attn'] });
    expect(local).toMatchObject({ field: 'gscope' });
    expect(local!.message).toMatch(/not priced yet with --cuda-graph-impl local/);
    // Without graphs the scope says nothing.
    expect(clusterIssues({ ...te, graphs: 'none', gscope: ['moe'] })).toEqual([]);
  });

  test('with dropout (gpt), a recomputed core_attn outside the scope passes at graphs; inside it is refused there', () => {
    const gpt = {
      ...defaultSettings,
      system: 'dgx-h100',
      graphs: 'transformer_engine' as const,
      layerArch: 'gpt' as const,
      recompute: 'selective' as const,
      rmodules: ['core_attn'] as const,
    };
    expect(clusterIssues({ ...gpt, gscope: ['mlp'] })).toEqual([]);
    const [inside] = clusterIssues({ ...gpt, gscope: ['attn'] });
    expect(inside).toMatchObject({ field: 'graphs' });
    expect(inside!.message).toMatch(/2545-2552/);
  });

  test("the cluster panel's command text: --cuda-graph-modules after --cuda-graph-impl, nothing for the whole layer", () => {
    expect(cudaGraphFlags('transformer_engine', ['attn', 'mlp'])).toEqual([
      '--cuda-graph-impl',
      'transformer_engine',
      '--cuda-graph-modules',
      'attn',
      'mlp',
    ]);
    expect(cudaGraphFlags('transformer_engine', [])).toEqual(['--cuda-graph-impl', 'transformer_engine']);
  });
});
