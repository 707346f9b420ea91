// `npm run project`: the argument parser directly, and the CLI as a user runs it (a child process).
import { runCli } from './run-cli.ts';
import { describe, expect, it } from 'vitest';
import { gpuNames } from '../../../src/hardware/gpus.ts';
import { systemNames, systems } from '../../../src/hardware/systems.ts';
import { parseProjectArgs } from '../../../scripts/project/project-args.ts';
import { defaultKernelOptions } from '../../../src/projection/layer/kernel-options.ts';

const run = (...args: string[]) => runCli('scripts/project/project.ts', ...args);

describe('parseProjectArgs', () => {
  it("defaults to the seeds' scenario and takes sizes as npm run sweep does", () => {
    const a = parseProjectArgs([]);
    expect(a.system).toBe(systems['v100-pcie-8']);
    expect(a.dtype).toBe('fp16');
    expect(a.degrees).toEqual([1, 2, 4, 8]);
    const b = parseProjectArgs([
      '--system',
      'dgx-h100',
      '--preset',
      'llama-gqa',
      '--h',
      '512',
      '--layers',
      '32',
      '--gpus',
      '16',
      '--tp',
      '2,8',
      '--sp',
      '--dtype',
      'bf16',
    ]);
    expect(b.system.name).toBe('dgx-h100');
    expect(b.setup.sizes).toMatchObject({ h: 512, heads: 8, groups: 2, s: 64 });
    expect(b.setup).toMatchObject({ layers: 32, gpus: 16, sp: true });
    expect(b.degrees).toEqual([2, 8]);
    expect(b.dtype).toBe('bf16');
  });

  it('names each bad argument', () => {
    expect(() => parseProjectArgs(['--system', 'dgx-9'])).toThrow(/unknown system "dgx-9"/);
    expect(() => parseProjectArgs(['--dtype', 'fp8'])).toThrow(/unknown dtype "fp8"/);
    expect(() => parseProjectArgs(['--preset', 'gpt5'])).toThrow(/unknown preset "gpt5"/);
    expect(() => parseProjectArgs(['--layers', '0'])).toThrow(/--layers must be a whole number ≥ 1, got "0"/);
    expect(() => parseProjectArgs(['--tp', ''])).toThrow(/--tp needs one or more degrees/);
    expect(() => parseProjectArgs(['--h', '7.5'])).toThrow(/--h must be a whole number/);
    expect(() => parseProjectArgs(['--scenario', 'x'])).toThrow(/unknown scenario "x": use seeds-v100, megatron-1.7b/);
    expect(() => parseProjectArgs(['--bogus'])).toThrow(/bogus/);
    expect(() => parseProjectArgs(['extra'])).toThrow(/unexpected argument "extra"/);
  });
});

describe('parseProjectArgs: kernel switches (Megatron spellings)', () => {
  it('defaults to the previous behaviour and reads each switch', () => {
    expect(parseProjectArgs([]).kernels).toEqual(defaultKernelOptions);
    const a = parseProjectArgs([
      '--system',
      'dgx-h100',
      '--dtype',
      'bf16',
      '--sp',
      '--arch',
      'gpt',
      '--attention-backend',
      'flash',
      '--fp8-format',
      'hybrid',
      '--enable-cuda-graph',
      '--tp-comm-overlap',
      '--fabric',
      'roce-400',
    ]);
    expect(a.kernels).toEqual({
      layerArch: 'gpt',
      attentionBackend: 'flash',
      fp8: 'hybrid',
      cudaGraphImpl: 'local',
      tpCommOverlap: true,
    });
    expect(a.system.inter.fabric).toBe('roce');
    expect(parseProjectArgs(['--cuda-graph-impl', 'transformer_engine']).kernels.cudaGraphImpl).toBe(
      'transformer_engine',
    );
    expect(parseProjectArgs(['--cross-entropy', 'megatron']).kernels.crossEntropy).toBe('megatron');
    expect(parseProjectArgs(['--gradient-accumulation-fusion']).kernels.gradAccumulationFusion).toBe(true);
    expect(parseProjectArgs([]).kernels.gradAccumulationFusion).toBeUndefined();
    const fp4 = parseProjectArgs(['--system', 'dgx-b200', '--fp4-format', 'e2m1', '--fp4-param-gather']);
    expect(fp4.setup.fp4ParamGather).toBe(true);
    expect(parseProjectArgs(['--system', 'dgx-b200', '--fp4-format', 'e2m1']).setup.fp4ParamGather).toBeUndefined();
  });

  it('names what is wrong', () => {
    expect(() => parseProjectArgs(['--arch', 'bert'])).toThrow(/--arch "bert": use llama, gpt/);
    expect(() => parseProjectArgs(['--attention-backend', 'sdpa'])).toThrow(/use auto, unfused, flash, fused/);
    expect(() => parseProjectArgs(['--fp8-format', 'hybrid'])).toThrow(/V100 PCIe 32 GB has no fp8 tensor cores/);
    expect(() => parseProjectArgs(['--attention-backend', 'flash'])).toThrow(/Ampere or newer/);
    expect(() => parseProjectArgs(['--tp-comm-overlap'])).toThrow(/--tp-comm-overlap needs --sp/);
    expect(() => parseProjectArgs(['--enable-cuda-graph', '--cuda-graph-impl', 'local'])).toThrow(/not both/);
    expect(() => parseProjectArgs(['--fabric', 'ib-xdr'])).toThrow(/unknown fabric "ib-xdr"/);
    expect(() => parseProjectArgs(['--cross-entropy', 'fused'])).toThrow(/--cross-entropy "fused": use plan, megatron/);
  });
});

describe('parseProjectArgs: Megatron-Core flags', () => {
  it('takes pipeline, context, data-parallel and recompute flags in Megatron’s spellings', () => {
    // An A100 system: --use-flash-attn also prices FlashAttention's time, which V100 cannot run.
    const a = parseProjectArgs([
      '--system',
      'dgx-a100',
      '--pipeline-model-parallel-size',
      '4',
      '--num-layers-per-virtual-pipeline-stage',
      '1',
      '--layers',
      '8',
      '--context-parallel-size',
      '2',
      '--use-distributed-optimizer',
      '--overlap-grad-reduce',
      '--overlap-param-gather',
      '--ddp-bucket-size',
      '1000000',
      '--recompute-granularity',
      'full',
      '--recompute-method',
      'block',
      '--recompute-num-layers',
      '2',
      '--use-flash-attn',
      '--tied-embeddings',
    ]);
    expect(a.setup).toMatchObject({
      pp: 4,
      vpp: 2,
      cp: 2,
      distributedOptimizer: true,
      overlapGradReduce: true,
      overlapParamGather: true,
      bucketSize: 1_000_000,
      recomputation: { granularity: 'full', method: 'block', layers: 2 },
      flashAttention: true,
      tiedEmbeddings: true,
    });
    expect(parseProjectArgs(['--pp', '2', '--vpp', '3']).setup).toMatchObject({ pp: 2, vpp: 3 });
    expect(parseProjectArgs(['--recompute-granularity', 'selective']).setup.recomputation).toEqual({
      granularity: 'selective',
    });
    const uneven = parseProjectArgs([
      '--pp',
      '8',
      '--decoder-first-pipeline-num-layers',
      '2',
      '--decoder-last-pipeline-num-layers',
      '2',
    ]);
    expect(uneven.setup).toMatchObject({ pp: 8, firstStageLayers: 2, lastStageLayers: 2 });
  });

  it('takes FSDP, the memory levers and --recompute-modules in Megatron’s spellings; an option without its switch is named', () => {
    const h100 = ['--system', 'dgx-h100', '--dtype', 'bf16'];
    expect(parseProjectArgs([...h100, '--use-megatron-fsdp']).setup.fsdp).toEqual({
      impl: 'megatron',
      strategy: 'optim_grads_params',
    });
    expect(
      parseProjectArgs([...h100, '--use-megatron-fsdp', '--data-parallel-sharding-strategy', 'optim_grads']).setup.fsdp,
    ).toEqual({ impl: 'megatron', strategy: 'optim_grads' });
    expect(
      parseProjectArgs([...h100, '--use-torch-fsdp2', '--torch-fsdp2-no-reshard-after-forward']).setup.fsdp,
    ).toEqual({ impl: 'torch', reshardAfterForward: false });
    const levers = parseProjectArgs([
      ...h100,
      '--use-distributed-optimizer',
      '--optimizer-cpu-offload',
      '--use-precision-aware-optimizer',
      '--optimizer-offload-fraction',
      '0.5',
      '--overlap-cpu-optimizer-d2h-h2d',
      '--fine-grained-activation-offloading',
      '--offload-modules',
      'core_attn attn_proj',
      '--activation-offload-fraction',
      '0.25',
      '--recompute-granularity',
      'selective',
      '--recompute-modules',
      'core_attn mlp',
      '--fp8-format',
      'hybrid',
      '--fp8-recipe',
      'tensorwise',
      '--fp8-param-gather',
    ]);
    expect(levers.setup).toMatchObject({
      optimizerCpuOffload: { fraction: 0.5, overlapD2hH2d: true },
      activationOffload: { modules: ['core_attn', 'attn_proj'], fraction: 0.25, minTensorElements: 1024 * 1024 },
      recomputation: { granularity: 'selective', modules: ['core_attn', 'mlp'] },
      fp8ParamGather: true,
    });
    expect(levers.kernels).toMatchObject({ fp8: 'hybrid', fp8Recipe: 'tensorwise' });
    expect(() => parseProjectArgs([...h100, '--data-parallel-sharding-strategy', 'optim'])).toThrow(
      /add --use-megatron-fsdp/,
    );
    expect(() => parseProjectArgs([...h100, '--torch-fsdp2-no-reshard-after-forward'])).toThrow(
      /add --use-torch-fsdp2/,
    );
    expect(() => parseProjectArgs([...h100, '--optimizer-offload-fraction', '0.5'])).toThrow(
      /need --optimizer-cpu-offload/,
    );
    expect(() => parseProjectArgs([...h100, '--optimizer-cpu-offload'])).toThrow(/--use-precision-aware-optimizer/);
    expect(() => parseProjectArgs([...h100, '--offload-modules', 'core_attn'])).toThrow(
      /need --fine-grained-activation-offloading/,
    );
    expect(() => parseProjectArgs([...h100, '--recompute-modules', 'mlp'])).toThrow(
      /applies with --recompute-granularity selective/,
    );
    expect(() => parseProjectArgs([...h100, '--fp8-recipe', 'mxfp8'])).toThrow(/give --fp8-format/);
  });

  it('reads --cp-comm-type and --hierarchical-context-parallel-sizes, naming a bad value', () => {
    expect(parseProjectArgs(['--cp', '2']).setup.cpExchange).toBeUndefined();
    expect(parseProjectArgs(['--cp', '2', '--cp-comm-type', 'a2a']).setup.cpExchange).toEqual({ type: 'a2a' });
    expect(
      parseProjectArgs(['--cp', '4', '--cp-comm-type', 'a2a+p2p', '--hierarchical-context-parallel-sizes', '2,2']).setup
        .cpExchange,
    ).toEqual({ type: 'a2a+p2p', hierarchical: [2, 2] });
    expect(() => parseProjectArgs(['--cp', '2', '--cp-comm-type', 'ring'])).toThrow(/not one of p2p, a2a/);
    expect(() =>
      parseProjectArgs(['--cp', '4', '--cp-comm-type', 'a2a+p2p', '--hierarchical-context-parallel-sizes', '2']),
    ).toThrow(/two whole numbers/);
  });

  it('says what to change on a contradictory or incomplete flag', () => {
    expect(() => parseProjectArgs(['--recompute-granularity', 'full'])).toThrow(
      /needs --recompute-method uniform or block/,
    );
    expect(() => parseProjectArgs(['--recompute-granularity', 'full', '--recompute-method', 'uniform'])).toThrow(
      /needs --recompute-num-layers/,
    );
    expect(() => parseProjectArgs(['--recompute-granularity', 'selective', '--recompute-num-layers', '1'])).toThrow(
      /selective takes no/,
    );
    expect(() => parseProjectArgs(['--recompute-method', 'block'])).toThrow(/need --recompute-granularity full/);
    expect(() => parseProjectArgs(['--overlap-param-gather'])).toThrow(/needs --use-distributed-optimizer/);
    expect(() => parseProjectArgs(['--pp', '2', '--pipeline-model-parallel-size', '2'])).toThrow(/same setting/);
    expect(() => parseProjectArgs(['--vpp', '2', '--num-layers-per-virtual-pipeline-stage', '1'])).toThrow(
      /give one of/,
    );
    expect(() => parseProjectArgs(['--tied-embeddings', '--untie-embeddings-and-output-weights'])).toThrow(
      /contradict/,
    );
    expect(() => parseProjectArgs(['--pp', '3', '--num-layers-per-virtual-pipeline-stage', '1'])).toThrow(
      /must divide the 10\/3 layers/,
    );
  });
});

describe('npm run project', () => {
  it('--json carries per row the step, both MFUs, the bubble, exposed communication per group and memory by lifetime', async () => {
    const r = await run(
      '--tp',
      '1',
      '--pp',
      '8',
      '--layers',
      '8',
      '--global-batch',
      '128',
      '--json',
      '--memory-timeline',
    );
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as {
      pp: number;
      memoryTimeline: { tp: number; stages: { stage: number; peakBytes: number; intervals: { class: string }[] }[] }[];
      rows: {
        pp: number;
        stepMs: number;
        tokensPerS: number;
        mfu: number;
        executedMfu: number;
        bubbleShare: number;
        exposedByGroup: { tp: number; cp: number; pp: number; dp: number };
        memoryGiB: number;
        memoryByClassGiB: { resident: number; perStep: number; perMicroBatch: number; transient: number };
        oom: boolean;
        stageParams: number[];
      }[];
    };
    expect(doc.pp).toBe(8);
    const row = doc.rows[0]!;
    expect(row.pp).toBe(8);
    expect(row.executedMfu).toBe(row.mfu);
    expect(row.bubbleShare).toBeGreaterThan(0);
    expect(row.exposedByGroup.pp).toBeGreaterThan(0);
    const c = row.memoryByClassGiB;
    expect(c.resident + c.perStep + c.perMicroBatch + c.transient).toBeCloseTo(row.memoryGiB, 9);
    expect(row.oom).toBe(false);
    expect(row.stageParams).toHaveLength(8);
    // The timeline behind the peak: 8 stages of intervals, one per micro-batch's activations (m = 16).
    const stages = doc.memoryTimeline[0]!.stages;
    expect(stages).toHaveLength(8);
    expect(Math.max(...stages.map((x) => x.peakBytes)) / 2 ** 30).toBeCloseTo(row.memoryGiB, 9);
    const perMicroBatch = (i: number) => stages[i]!.intervals.filter((x) => x.class === 'perMicroBatch').length;
    expect(perMicroBatch(0)).toBe(16);
  }, 60_000);

  it('prints the fixed-budget table and, with --json, the same numbers', async () => {
    const table = await run('--tp', '1,8');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^1\s+8\s+1\s+[\d.]+ ms\s+[\d,]+\s/m);
    expect(table.stdout).toMatch(/^8\s+1\s+8\s/m);
    const json = await run('--tp', '1,8', '--json');
    const doc = JSON.parse(json.stdout) as { rows: { tp: number; tokensPerS: number }[] };
    expect(doc.rows.map((r) => r.tp)).toEqual([1, 8]);
    expect(table.stdout).toContain(Math.round(doc.rows[0]!.tokensPerS).toLocaleString('en-US'));
  }, 60_000);

  it('--gemm-table prints the GEMM model for representative shapes', async () => {
    const r = await run('--system', 'dgx-h100', '--dtype', 'bf16', '--gemm-table');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^GEMM model on H100 SXM 80 GB in bf16/);
    expect(r.stdout).toMatch(/^square 8192\s+8192×8192×8192\s+[\d.]+ µs/m);
    expect(r.stdout).toMatch(/^MLP fc1, t = 8\s+4096×1792×4096/m);
  }, 60_000);

  it('--help lists every system and GPU', async () => {
    const r = await run('--help');
    expect(r.code).toBe(0);
    for (const n of [...systemNames, ...gpuNames]) expect(r.stdout).toContain(n);
  }, 60_000);

  it('exits 2 with the reason on a bad argument or when no degree is legal', async () => {
    const bad = await run('--dtype', 'fp8');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^project: unknown dtype "fp8"/);
    const illegal = await run('--tp', '3');
    expect(illegal.code).toBe(2);
    expect(illegal.stderr).toMatch(/t=3: /);
  }, 60_000);
});

describe('--multi-latent-attention', () => {
  it('reads the MLA flags with their defaults, and refuses a width without the switch', () => {
    const a = parseProjectArgs(['--multi-latent-attention', '--kv-lora-rank', '512', '--q-lora-rank', '1536']);
    expect(a.setup.mla).toEqual({
      qLoraRank: 1536,
      kvLoraRank: 512,
      qkHeadDim: 128,
      qkPosEmbHeadDim: 64,
      vHeadDim: 128,
      qkLayernorm: false,
    });
    expect(parseProjectArgs([]).setup.mla).toBeUndefined();
    expect(() => parseProjectArgs(['--kv-lora-rank', '512'])).toThrow(
      /--kv-lora-rank is a multi-latent attention flag: give --multi-latent-attention too/,
    );
  });
});

describe('--hf-config', () => {
  it('takes the model from a built-in config or a config.json file; size flags beside it win; MoE and MLA fill their flags', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const a = parseProjectArgs(['--hf-config', 'llama-3.1-70b', '--s', '4096', '--b', '1']);
    expect(a.setup.sizes).toEqual({ s: 4096, b: 1, h: 8192, heads: 64, groups: 8, ffn: 28672, vocab: 128256 });
    expect([a.setup.layers, a.setup.tiedEmbeddings]).toEqual([80, false]);
    expect(a.hfConfig?.from).toMatch(/meta-llama\/Llama-3\.1-70B/);
    expect(parseProjectArgs(['--hf-config', 'llama-3.1-8b', '--layers', '4', '--vocab', '32000']).setup).toMatchObject({
      layers: 4,
      sizes: { vocab: 32000, h: 4096 },
    });
    const dir = mkdtempSync(join(tmpdir(), 'hf-config-'));
    const file = join(dir, 'config.json');
    writeFileSync(
      file,
      JSON.stringify({
        hidden_size: 1024,
        num_hidden_layers: 6,
        num_attention_heads: 16,
        num_key_value_heads: 4,
        intermediate_size: 2816,
        vocab_size: 32000,
        tie_word_embeddings: true,
      }),
    );
    const f = parseProjectArgs(['--hf-config', file]);
    expect(f.setup.sizes).toMatchObject({ h: 1024, heads: 16, groups: 4, ffn: 2816, vocab: 32000 });
    expect([f.setup.layers, f.setup.tiedEmbeddings]).toEqual([6, true]);
    // A config names no s or b: Megatron-LM's Mixtral example's 4096 and 1 (hf-config.ts hfJobDefaults).
    expect(parseProjectArgs(['--hf-config', 'mixtral-8x7b-v0.1']).setup.sizes).toMatchObject({ s: 4096, b: 1 });
    expect(parseProjectArgs(['--hf-config', 'mixtral-8x7b-v0.1']).setup.moe).toMatchObject({
      experts: 8,
      topk: 2,
      ffn: 14336,
    });
    // DeepSeek-V3: its experts with the first 3 layers dense, MLA; a MoE flag given beside it wins.
    const ds = parseProjectArgs(['--hf-config', 'deepseek-v3', '--ep', '8', '--moe-router-topk', '4']).setup;
    expect(ds.moe).toMatchObject({ experts: 256, topk: 4, ffn: 2048, sharedFfn: 2048, ep: 8 });
    expect((ds.moe!.layerFreq as readonly number[]).slice(0, 4)).toEqual([0, 0, 0, 1]);
    expect(ds.mla).toEqual({
      qLoraRank: 1536,
      kvLoraRank: 512,
      qkHeadDim: 128,
      qkPosEmbHeadDim: 64,
      vHeadDim: 128,
      qkLayernorm: true,
    });
    expect(() => parseProjectArgs(['--hf-config', join(dir, 'none.json')])).toThrow(
      /not a readable file \(ENOENT\) nor a built-in config \(llama-3\.1-8b/,
    );
    expect(() => parseProjectArgs(['--hf-config', 'llama-3.1-8b', '--preset', 'classroom'])).toThrow(/give one/);
  });
});
