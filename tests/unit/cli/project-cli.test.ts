// `npm run project`: the argument parser directly, and the CLI as a user runs it (a child process).
import { runCli } from './run-cli.ts';
import { describe, expect, it } from 'vitest';
import { gpuNames } from '../../../src/hardware/gpus.ts';
import { systemNames, systems } from '../../../src/hardware/systems.ts';
import { parseProjectArgs } from '../../../scripts/project-args.ts';
import { defaultKernelOptions } from '../../../src/projection/kernel-options.ts';

const run = (...args: string[]) => runCli('scripts/project.ts', ...args);

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
      arch: 'gpt',
      attentionBackend: 'flash',
      fp8: 'hybrid',
      cudaGraphImpl: 'local',
      tpCommOverlap: true,
    });
    expect(a.system.inter.fabric).toBe('roce');
    expect(parseProjectArgs(['--cuda-graph-impl', 'transformer_engine']).kernels.cudaGraphImpl).toBe(
      'transformer_engine',
    );
  });

  it('names what is wrong', () => {
    expect(() => parseProjectArgs(['--arch', 'bert'])).toThrow(/--arch "bert": use llama, gpt/);
    expect(() => parseProjectArgs(['--attention-backend', 'sdpa'])).toThrow(/use unfused, flash, fused/);
    expect(() => parseProjectArgs(['--fp8-format', 'hybrid'])).toThrow(/V100 PCIe 32 GB has no fp8 tensor cores/);
    expect(() => parseProjectArgs(['--attention-backend', 'flash'])).toThrow(/Ampere or newer/);
    expect(() => parseProjectArgs(['--tp-comm-overlap'])).toThrow(/--tp-comm-overlap needs --sp/);
    expect(() => parseProjectArgs(['--enable-cuda-graph', '--cuda-graph-impl', 'local'])).toThrow(/not both/);
    expect(() => parseProjectArgs(['--fabric', 'ib-xdr'])).toThrow(/unknown fabric "ib-xdr"/);
  });
});

describe('npm run project', () => {
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
