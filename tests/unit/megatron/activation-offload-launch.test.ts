import { describe, expect, test } from 'vitest';
import { offloadLaunchRefusals } from '../../../src/megatron/activation-offload-launch.ts';
import { flagMap, listAfter } from '../../../src/megatron/megatron-command.ts';
import { megatronLaunch, transformerImpl } from '../../../src/megatron/megatron-args.ts';
import { checkMegatronLaunch, ngcEnvironment } from '../../../src/megatron/megatron-check.ts';
import { configFromPreset } from '../../../src/parallel/config.ts';

const OK_ENV = { NVTE_CPU_OFFLOAD_V1: '1' };
/** The sources of the rules `argv` fails (Transformer Engine version unknown unless given). */
const fails = (argv: readonly string[], env: Record<string, string> = OK_ENV, te?: [number, number]): string[] => {
  const flags = flagMap(argv);
  return offloadLaunchRefusals({
    flag: (f) => flags.get(f),
    list: (f) => listAfter(argv, f),
    env,
    ...(te ? { transformerEngineVersion: te } : {}),
  }).map((f) => f.source.replace(/^megatron\/(training|core\/transformer)\//, ''));
};
const OFF = ['--fine-grained-activation-offloading', '--offload-modules'];

describe("--fine-grained-activation-offloading: Megatron's start-up checks (core_v0.19.0)", () => {
  test('without the switch nothing is checked; a legal dense setup passes', () => {
    expect(fails(['--offload-modules', 'attn_proj'], {})).toEqual([]);
    expect(fails([...OFF, 'core_attn', 'attn_proj', 'qkv_linear'])).toEqual([]);
  });

  test('arguments.py: the transformer_engine implementation, and NVTE_CPU_OFFLOAD_V1=1 from TE 2.10', () => {
    expect(fails([...OFF, 'core_attn', '--transformer-impl', 'local'])).toEqual(['arguments.py:1855-1856']);
    expect(fails([...OFF, 'core_attn'], {})).toEqual(['arguments.py:1857-1859']);
    expect(fails([...OFF, 'core_attn'], {}, [2, 10])).toEqual(['arguments.py:1857-1859']);
    expect(fails([...OFF, 'core_attn'], {}, [2, 9])).toEqual([]);
  });

  test('transformer_config.py: cpu_offloading, an empty or unknown list, attn_proj alone', () => {
    expect(fails([...OFF, 'core_attn', '--cpu-offloading-num-layers', '2'])).toEqual([
      'transformer_config.py:1849-1851',
    ]);
    expect(fails(['--fine-grained-activation-offloading'])).toEqual(['transformer_config.py:1852']);
    expect(fails([...OFF, 'core_attn', 'mlp'])).toEqual(['transformer_config.py:1863-1867']);
    expect(fails([...OFF, 'attn_proj'])).toEqual(['transformer_config.py:1868-1873']);
  });

  test("the MoE layer's modules while 'moe' is recomputed (selective only)", () => {
    const moe = ['--recompute-granularity', 'selective', '--recompute-modules', 'moe'];
    expect(fails([...OFF, 'moe_act', ...moe])).toEqual(['transformer_config.py:1874-1884']);
    expect(fails([...OFF, 'core_attn', ...moe])).toEqual([]);
    expect(fails([...OFF, 'moe_act', '--recompute-modules', 'moe'])).toEqual([]);
  });

  test('the tuning numbers and fused_group_mlp', () => {
    expect(fails([...OFF, 'core_attn', '--min-offloaded-tensor-size', '-1'])).toEqual([
      'transformer_config.py:1885-1887',
    ]);
    expect(fails([...OFF, 'core_attn', '--activation-offload-fraction', '1.5'])).toEqual([
      'transformer_config.py:1888-1890',
    ]);
    expect(fails([...OFF, 'core_attn', '--activation-offload-fraction', '0'])).toEqual([]);
    expect(fails([...OFF, 'core_attn', '--delta-offload-bytes-across-pp-ranks', '-8'])).toEqual([
      'transformer_config.py:1891-1893',
    ]);
    expect(fails([...OFF, 'fused_group_mlp'])).toEqual(['transformer_config.py:1895-1897']);
    expect(fails([...OFF, 'fused_group_mlp', 'moe_act', '--use-transformer-engine-op-fuser'])).toEqual([
      'transformer_config.py:1898-1903',
    ]);
  });

  test('with CUDA graphs: transformer_engine passes, local only with partial MoE modules', () => {
    expect(fails([...OFF, 'core_attn', '--cuda-graph-impl', 'transformer_engine'])).toEqual([]);
    // local, whole-layer capture (the default "full"): the dense module and the empty scope both fail.
    expect(fails([...OFF, 'core_attn', '--cuda-graph-impl', 'local'])).toEqual([
      'transformer_config.py:2598-2606',
      'transformer_config.py:2607-2610',
      'transformer_config.py:2617-2626',
    ]);
    expect(
      fails([...OFF, 'moe_act', '--cuda-graph-impl', 'local', '--cuda-graph-modules', 'attn', 'moe_router']),
    ).toEqual([]);
    expect(fails([...OFF, 'moe_act', '--cuda-graph-impl', 'local', '--cuda-graph-modules', 'attn', 'moe'])).toEqual([
      'transformer_config.py:2617-2626',
      'transformer_config.py:2627-2629',
    ]);
    // --enable-cuda-graph is the deprecated spelling of local (:2373-2375).
    expect(fails([...OFF, 'core_attn', '--enable-cuda-graph', '--cuda-graph-modules', 'attn'])).toEqual([
      'transformer_config.py:2598-2606',
      'transformer_config.py:2617-2626',
    ]);
    expect(
      fails([...OFF, 'core_attn', '--cuda-graph-impl', 'transformer_engine', '--cuda-graph-warmup-steps', '0']),
    ).toEqual(['transformer_config.py:2630-2633']);
    expect(fails([...OFF, 'core_attn', '--cuda-graph-impl', 'full_iteration'])).toEqual([
      'transformer_config.py:2634-2642',
    ]);
    const full = [...OFF, 'core_attn', '--cuda-graph-impl', 'full_iteration'];
    expect(fails([...full, '--fine-grained-offloading-max-inflight-offloads', '2'])).toEqual([]);
    expect(fails([...full, '--fine-grained-offloading-max-inflight-offloads', '2', '--cpu-offloading'])).toEqual([
      'transformer_config.py:1849-1851',
    ]);
    expect(fails([...OFF, 'core_attn', '--cuda-graph-impl', 'transformer_engine', '--cpu-offloading'])).toEqual([
      'transformer_config.py:1849-1851',
      'transformer_config.py:2467-2468',
    ]);
  });

  test("the job bundle's command with the offload passes the whole port only with NVTE_CPU_OFFLOAD_V1=1", () => {
    const c = configFromPreset('llama-gqa', { tp: 2, sp: true });
    expect(transformerImpl(c)).toBe('transformer_engine');
    const launch = megatronLaunch(c);
    const args = [...launch.args, ...OFF, 'core_attn', 'attn_proj'];
    expect(checkMegatronLaunch(args, ngcEnvironment(2, { ...launch.env, ...OK_ENV }))).toEqual([]);
    expect(checkMegatronLaunch(args, ngcEnvironment(2, launch.env)).map((f) => f.source)).toEqual([
      'megatron/training/arguments.py:1857-1859',
    ]);
  });
});
