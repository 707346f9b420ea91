import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { systems } from '../../../src/hardware/systems.ts';
import { bundleProfile, jobBundle, jobNodes, type JobSpec } from '../../../src/megatron/job-bundle.ts';
import { jobManifestFile, manifestProjection, readJobManifest } from '../../../src/megatron/job-manifest.ts';
import { checkMegatronLaunch, ngcEnvironment } from '../../../src/megatron/megatron-check.ts';
import { seedsV100 } from '../../../src/megatron/scenarios.ts';
import { twoNodeJobSpec } from '../kineto/kineto-fixtures.ts';
import { memoryHistory, readMemorySnapshot } from '../../../src/kineto/memory-snapshot.ts';

/** Every flag of the pinned release (tests/fixtures/megatron-flags.json). */
const known = new Set(
  (
    JSON.parse(readFileSync(new URL('../../fixtures/megatron-flags.json', import.meta.url), 'utf8')) as {
      flags: string[];
    }
  ).flags,
);

/** The seeds' scenario at t = 2 (DP 4) on their one 8-GPU box; the 2-node H100 job at t = 8 with SP is twoNodeJobSpec. */
const seeds: JobSpec = {
  name: 'seeds-v100-t2',
  setup: { ...seedsV100.setup, tp: 2 },
  dtype: seedsV100.dtype,
  system: seedsV100.system,
  gpusPerNode: systems[seedsV100.system].gpusPerNode,
};

const root = mkdtempSync(join(tmpdir(), 'job-bundle-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Writes the bundle to a fresh directory; returns it. */
function write(spec: JobSpec): string {
  const dir = join(root, spec.name);
  mkdirSync(dir, { recursive: true });
  for (const f of jobBundle(spec)) {
    writeFileSync(join(dir, f.path), f.text);
    if (f.executable) chmodSync(join(dir, f.path), 0o755);
  }
  return dir;
}

/** A stand-in for a cluster command (torchrun, srun, scontrol): a script on PATH that appends its argv, NUL-separated, to calls.log and does `body`. */
function tool(bin: string, name: string, body = ''): void {
  writeFileSync(
    join(bin, name),
    `#!/usr/bin/env bash\nprintf '%s\\0' ${name} "NODE_RANK=\${NODE_RANK:-}" "$@" >> "$CALLS"; printf '\\n' >> "$CALLS"\n${body}\n`,
  );
  chmodSync(join(bin, name), 0o755);
}

/**
 * The arguments a bundle's launch passes to pretrain_gpt.py: env.sh and args.sh sourced with `env`,
 * the bash arrays `arrays` printed NUL-separated.
 */
function bundleArgv(dir: string, env: Record<string, string>, arrays: readonly string[]): string[] {
  const printed = arrays.map((a) => `"\${${a}[@]}"`).join(' ');
  return execFileSync(
    'bash',
    ['-c', `BUNDLE_DIR="$1"; source "$1/env.sh"; source "$1/args.sh"; printf '%s\\0' ${printed}`, '_', dir],
    { env: { ...process.env, ...env }, encoding: 'utf8' },
  )
    .split('\0')
    .slice(0, -1);
}

/** srun as Slurm runs it with one task per node: its command once per node, with that node's SLURM_NODEID. */
const srunStandIn =
  'while [[ "$1" == --* ]]; do shift; done; for ((i = 0; i < SLURM_JOB_NUM_NODES; i++)); do SLURM_NODEID=$i "$@"; done';

/** The argv of each logged call. */
const calls = (log: string): string[][] =>
  readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('\0').slice(0, -1));

describe.each([
  ['the seeds’ scenario on one node', seeds, 1],
  ['a 2-node job', twoNodeJobSpec, 2],
] as const)('job bundle: %s', (_, spec, nodes) => {
  const dir = write(spec);
  const manifest = readJobManifest(readFileSync(join(dir, jobManifestFile), 'utf8'));

  test('every script parses (bash -n)', () => {
    for (const f of ['setup.sh', 'env.sh', 'args.sh', 'launch.sh', 'job.sbatch'])
      expect(() => execFileSync('bash', ['-n', join(dir, f)])).not.toThrow();
  });

  test('the arguments bash builds exist in the pinned release and pass the port of its checks, with mock and with real data', () => {
    for (const data of ['', '/data/corpus_text_document']) {
      const argv = bundleArgv(dir, { DATA_PATH: data, RUN_DIR: '/scratch/run' }, ['MEGATRON_ARGS', 'DATA_ARGS']);
      expect(argv.filter((x) => x.startsWith('--') && !known.has(x))).toEqual([]);
      expect(argv).toContain('/scratch/run/tensorboard');
      expect(argv.includes('--mock-data')).toBe(data === '');
      if (data)
        expect(argv.slice(argv.indexOf('--data-path'), argv.indexOf('--data-path') + 2)).toEqual(['--data-path', data]);
      // On a V100 the job runs without Transformer Engine (its builds start at sm_75) and without Apex
      // (whose FusedLayerNorm rejects RMSNorm as the final norm): the bundle's README says so.
      const h100 = spec.system === 'dgx-h100';
      const env = {
        ...ngcEnvironment(spec.setup.gpus, { CUDA_DEVICE_MAX_CONNECTIONS: '1' }, h100 ? 9 : 7),
        ...(!h100 && { transformerEngine: false, apex: false }),
      };
      expect(checkMegatronLaunch(argv, env)).toEqual([]);
      for (const f of ['--profile', '--use-pytorch-profiler']) expect(argv).toContain(f);
      expect(argv[argv.indexOf('--profile-step-start') + 1]).toBe(String(bundleProfile.stepStart));
      expect(argv[argv.indexOf('--profile-step-end') + 1]).toBe(String(bundleProfile.stepEnd));
    }
  });

  test('the manifest names the pin and reads back to the same setup and system (the trace view’s path)', () => {
    expect(manifest.megatron).toEqual({
      repository: 'NVIDIA/Megatron-LM',
      tag: 'core_v0.19.0',
      commit: '5be9626709af2722333bf54797c954c09edeada3',
    });
    expect([manifest.nodes, manifest.nodes * manifest.gpusPerNode]).toEqual([nodes, spec.setup.gpus]);
    const { parsed, system } = manifestProjection(manifest);
    expect(parsed.setup).toEqual({ ...spec.setup, recompute: spec.setup.recompute ?? false });
    expect(parsed.dtype).toBe(spec.dtype);
    expect(system.name).toBe(spec.system);
    expect(readFileSync(join(dir, 'setup.sh'), 'utf8')).toContain(`checkout --detach ${manifest.megatron.commit}`);
  });

  test('launch.sh runs torchrun with this node’s rank and copies the manifest beside the traces; job.sbatch starts one launch per node', () => {
    const bin = join(root, `${spec.name}-bin`);
    const run = join(root, `${spec.name}-run`);
    const megatron = join(root, `${spec.name}-megatron`);
    for (const d of [bin, megatron]) mkdirSync(d, { recursive: true });
    const log = join(root, `${spec.name}-calls.log`);
    tool(bin, 'torchrun');
    tool(bin, 'scontrol', "printf 'node-a\\nnode-b\\n'");
    tool(bin, 'srun', srunStandIn);
    const env = {
      ...process.env,
      PATH: `${bin}:${process.env.PATH}`,
      CALLS: log,
      RUN_DIR: run,
      MEGATRON_LM: megatron,
      SLURM_JOB_NODELIST: 'node-[a-b]',
      SLURM_JOB_NUM_NODES: String(nodes),
      SLURM_SUBMIT_DIR: dir,
    };
    try {
      execFileSync('bash', [join(dir, 'job.sbatch')], { env, stdio: 'pipe' });
    } catch (e) {
      throw new Error(`job.sbatch failed: ${String((e as { stderr?: Buffer }).stderr ?? e)}`, { cause: e });
    }
    const torchruns = calls(log).filter((c) => c[0] === 'torchrun');
    expect(torchruns.length).toBe(nodes);
    torchruns.forEach((c, rank) => {
      const at = (f: string) => c[c.indexOf(f) + 1];
      expect([at('--nnodes'), at('--node-rank'), at('--master-addr'), at('--nproc-per-node')]).toEqual([
        String(nodes),
        String(rank),
        'node-a',
        String(manifest.gpusPerNode),
      ]);
      expect(c).toContain('pretrain_gpt.py');
    });
    expect(calls(log).filter((c) => c[0] === 'srun').length).toBe(1);
    expect(existsSync(join(run, 'torch_profile', jobManifestFile))).toBe(true);
    expect(readJobManifest(readFileSync(join(run, 'torch_profile', jobManifestFile), 'utf8'))).toEqual(manifest);
  });
});

describe('job.sbatch submitted from another directory', () => {
  test('finds its bundle from the path sbatch recorded, not the submission directory', () => {
    write({ ...twoNodeJobSpec, name: 'elsewhere' });
    const bin = join(root, 'elsewhere-bin');
    const spool = join(root, 'elsewhere-spool');
    const cwd = join(root, 'elsewhere-cwd');
    for (const d of [bin, spool, cwd]) mkdirSync(d, { recursive: true });
    const log = join(root, 'elsewhere-calls.log');
    tool(bin, 'torchrun');
    // sbatch: as Slurm does, records the script's absolute path (scontrol's Command=), copies the
    // script to the spool directory and runs the copy in the directory sbatch ran in.
    tool(
      bin,
      'sbatch',
      `script="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; printf '%s' "$script" > "$SPOOL/command"
cp "$1" "$SPOOL/slurm_script"; SLURM_JOB_ID=7 SLURM_SUBMIT_DIR="$PWD" bash "$SPOOL/slurm_script"`,
    );
    tool(
      bin,
      'scontrol',
      `if [ "$1 $2" = "show job" ]; then printf 'JobId=%s JobName=elsewhere\n   Command=%s\n   WorkDir=%s\n' "$3" "$(cat "$SPOOL/command")" "$PWD"; else printf 'node-a\nnode-b\n'; fi`,
    );
    tool(bin, 'srun', srunStandIn);
    const env = {
      ...process.env,
      PATH: `${bin}:${process.env.PATH}`,
      CALLS: log,
      SPOOL: spool,
      RUN_DIR: join(root, 'elsewhere-run'),
      MEGATRON_LM: join(root, 'elsewhere-megatron'),
      SLURM_JOB_NODELIST: 'node-[a-b]',
      SLURM_JOB_NUM_NODES: '2',
    };
    mkdirSync(env.MEGATRON_LM, { recursive: true });
    try {
      execFileSync('sbatch', [join('..', 'elsewhere', 'job.sbatch')], { env, cwd, stdio: 'pipe' });
    } catch (e) {
      throw new Error(`sbatch job.sbatch failed: ${String((e as { stderr?: Buffer }).stderr ?? e)}`, { cause: e });
    }
    expect(calls(log).filter((c) => c[0] === 'torchrun').length).toBe(2);
    // Without the recorded path (a scontrol that knows no job) and from another directory, it says what to do.
    tool(bin, 'scontrol', 'exit 1');
    const fail = (() => {
      try {
        execFileSync('sbatch', [join('..', 'elsewhere', 'job.sbatch')], { env, cwd, stdio: 'pipe' });
        return '';
      } catch (e) {
        return String((e as { stderr?: Buffer }).stderr);
      }
    })();
    expect(fail).toMatch(
      /launch\.sh is neither beside the submitted script .* submit with sbatch --export=ALL,BUNDLE_DIR=/,
    );
  });
});

describe('the target GPUs and the release’s requirements', () => {
  const readme = (spec: JobSpec): string => jobBundle(spec).find((f) => f.path === 'README.md')!.text;

  test('SP on V100 is refused: Transformer Engine’s CUDA 13 builds start at sm_75', () => {
    expect(() => jobBundle({ ...seeds, setup: { ...seeds.setup, sp: true } })).toThrow(
      /V100.*cannot run this job: sequence parallelism needs the Transformer Engine spec.*sm_75.*without --sp/,
    );
  });

  test('the README states Python ≥ 3.12 and PyTorch ≥ 2.6, the environment per GPU, and the shared filesystem', () => {
    const v100 = readme(seeds);
    expect(v100).toContain('Python ≥ 3.12 and PyTorch ≥ 2.6');
    expect(v100).toMatch(/without\*\* Transformer Engine and without Apex/);
    expect(v100).not.toMatch(/shared|every node sees/);
    const h100 = readme(twoNodeJobSpec);
    expect(h100).toMatch(/Use a container with Transformer Engine/);
    expect(h100).toMatch(/filesystem every node sees/);
  });
});

describe('bundle input checks', () => {
  test('N must fill whole nodes; fewer GPUs than a node run on one', () => {
    expect(jobNodes(16, 8)).toEqual({ nodes: 2, perNode: 8 });
    expect(jobNodes(4, 8)).toEqual({ nodes: 1, perNode: 4 });
    expect(() => jobNodes(12, 8)).toThrow(/do not fill whole nodes of 8/);
  });

  test('a setup beyond what the bundle emits is refused, naming what to leave out', () => {
    expect(() => jobBundle({ ...seeds, setup: { ...seeds.setup, pp: 2, distributedOptimizer: true } })).toThrow(
      /also has pipeline parallelism \(p = 2\), the distributed optimizer: leave those out/,
    );
  });

  test('a manifest that is not one is named', () => {
    expect(() => readJobManifest('{"kind":"other"}')).toThrow(/kind is "other"/);
    expect(() => readJobManifest('nope')).toThrow(/not JSON/);
  });
});

describe('job bundle: the allocator history (RECORD_MEMORY=1)', () => {
  const dir = write({ ...twoNodeJobSpec, name: 'memory-2x8' });

  test('the flags exist in the pinned release and pass its checks; off by default', () => {
    const argv = (record: string): string[] =>
      bundleArgv(dir, { RECORD_MEMORY: record, RUN_DIR: '/scratch/run' }, ['MEGATRON_ARGS', 'MEMORY_ARGS']);
    expect(argv('0')).not.toContain('--record-memory-history');
    const on = argv('1');
    expect(on.slice(on.indexOf('--record-memory-history'))).toEqual([
      '--record-memory-history',
      '--memory-snapshot-path',
      '/scratch/run/memory-snapshot.pickle',
    ]);
    expect(on.filter((x) => x.startsWith('--') && !known.has(x))).toEqual([]);
    expect(
      checkMegatronLaunch(on, ngcEnvironment(twoNodeJobSpec.setup.gpus, { CUDA_DEVICE_MAX_CONNECTIONS: '1' })),
    ).toEqual([]);
  });

  test('launch.sh converts the last rank’s pickle on the node that holds it, and only there', () => {
    const bin = join(root, 'memory-bin');
    const megatron = join(root, 'memory-megatron');
    for (const d of [bin, megatron]) mkdirSync(d, { recursive: true });
    const log = join(root, 'memory-calls.log');
    // torchrun stand-in: the last node's writes a snapshot pickle in torch.cuda.memory._snapshot()'s format where Megatron is told to.
    tool(
      bin,
      'torchrun',
      `if [ "$NODE_RANK" = 1 ]; then for ((i = 1; i <= $#; i++)); do [ "\${!i}" = --memory-snapshot-path ] && j=$((i + 1)) && python3 -c '
import pickle, sys
ev = lambda a, s: {"action": a, "addr": 0, "size": s, "stream": 0, "time_us": 1000, "frames": []}
seg = {"address": 0, "total_size": 4096, "stream": 0, "segment_type": "small", "allocated_size": 512, "active_size": 512, "blocks": []}
pickle.dump({"segments": [seg], "device_traces": [[ev("segment_alloc", 4096), ev("alloc", 512)]]}, open(sys.argv[1], "wb"))
' "\${!j}"; done; fi; true`,
    );
    const nodes = [0, 1].map((node) => {
      const run = join(root, `memory-run-${node}`);
      execFileSync('bash', [join(dir, 'launch.sh')], {
        env: {
          ...process.env,
          PATH: `${bin}:${process.env.PATH}`,
          CALLS: log,
          RUN_DIR: run,
          MEGATRON_LM: megatron,
          NNODES: '2',
          NODE_RANK: String(node),
          RECORD_MEMORY: '1',
        },
        stdio: 'pipe',
      });
      return run;
    });
    expect(existsSync(join(nodes[0]!, 'memory-rank-15.json'))).toBe(false);
    const json: unknown = JSON.parse(readFileSync(join(nodes[1]!, 'memory-rank-15.json'), 'utf8'));
    const s = readMemorySnapshot(json, 'memory-rank-15.json');
    expect(s.rank).toBe(15);
    expect(memoryHistory(s)).toMatchObject({ peakAllocated: 512, peakReserved: 4096 });
  });
});

describe('job bundle: an FSDP job (Megatron-FSDP, ZeRO-3)', () => {
  const spec: JobSpec = {
    ...twoNodeJobSpec,
    name: 'fsdp-2x8',
    setup: { ...twoNodeJobSpec.setup, fsdp: { impl: 'megatron', strategy: 'optim_grads_params' } },
  };
  const dir = write(spec);

  test('carries the FSDP flags, which exist in the pinned release and pass its checks with CUDA_DEVICE_MAX_CONNECTIONS unset', () => {
    const argv = bundleArgv(dir, { RUN_DIR: '/scratch/run' }, ['MEGATRON_ARGS']);
    expect(argv.slice(argv.indexOf('--use-megatron-fsdp'), argv.indexOf('--use-megatron-fsdp') + 5)).toEqual([
      '--use-megatron-fsdp',
      '--data-parallel-sharding-strategy',
      'optim_grads_params',
      '--ckpt-format',
      'fsdp_dtensor',
    ]);
    expect(argv.filter((x) => x.startsWith('--') && !known.has(x))).toEqual([]);
    expect(checkMegatronLaunch(argv, ngcEnvironment(spec.setup.gpus, {}))).toEqual([]);
    // The DDP bundle's CUDA_DEVICE_MAX_CONNECTIONS=1 would fail Megatron-FSDP's assert.
    expect(
      checkMegatronLaunch(argv, ngcEnvironment(spec.setup.gpus, { CUDA_DEVICE_MAX_CONNECTIONS: '1' })).map(
        (f) => f.source,
      ),
    ).toEqual(['megatron/training/arguments.py:1143-1144']);
  });

  test('env.sh unsets CUDA_DEVICE_MAX_CONNECTIONS, and the manifest reads back to the same setup', () => {
    const shown = execFileSync(
      'bash',
      ['-c', `source "${join(dir, 'env.sh')}"; printf '%s' "\${CUDA_DEVICE_MAX_CONNECTIONS-unset}"`],
      { env: { ...process.env, BUNDLE_DIR: dir, CUDA_DEVICE_MAX_CONNECTIONS: '1' }, encoding: 'utf8' },
    );
    expect(shown).toBe('unset');
    const manifest = readJobManifest(readFileSync(join(dir, jobManifestFile), 'utf8'));
    expect(manifest.command).not.toContain('CUDA_DEVICE_MAX_CONNECTIONS');
    expect(manifestProjection(manifest).parsed.setup.fsdp).toEqual(spec.setup.fsdp);
  });
});
