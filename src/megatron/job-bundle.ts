// A job bundle: the directory a cluster user runs to train the playground's configuration with
// Megatron-LM at the pinned release, on one node or N, with the PyTorch profiler writing Kineto
// traces for a few steps and a manifest beside them so the trace view finds the projection.
import { fsdpFlags } from './fsdp.ts';
import type { TrainDtype } from '../hardware/dtype.ts';
import { parseSystem } from '../hardware/systems.ts';
import type { LayerConfig } from '../parallel/config.ts';
import { jobManifestFile, jobManifestKind, type JobManifest } from './job-manifest.ts';
import {
  formatMegatronCommand,
  megatronCaveats,
  megatronModelArgs,
  megatronRelease,
  megatronScheduleArgs,
  transformerImpl,
  type MegatronRun,
} from './megatron-args.ts';
import { mlaArgv } from './mla.ts';
import { moeArgv } from './moe.ts';
import { setupConfig, type TrainingSetup } from './training-setup.ts';
import {
  memoryHistoryArgs,
  memorySnapshotFile,
  memorySnapshotScript,
  memorySnapshotScriptName,
} from './memory-snapshot-script.ts';

/** What to bundle: the setup with its t, the precision, the catalog system and the node shape. */
export interface JobSpec {
  readonly name: string;
  readonly setup: TrainingSetup;
  readonly dtype: TrainDtype;
  /** Catalog system name (src/hardware/systems.ts) the projection of this job uses. */
  readonly system: string;
  readonly gpusPerNode: number;
  /** Seed, RoPE base and ε of the layer (configDefaults when absent). */
  readonly layer?: Partial<Pick<LayerConfig, 'seed' | 'ropeBase' | 'eps'>>;
}

/** One file of the bundle, path relative to its root. */
export interface BundleFile {
  readonly path: string;
  readonly text: string;
  readonly executable: boolean;
}

/**
 * What the pinned release needs to run (Megatron-LM core_v0.19.0 pyproject.toml: requires-python
 * ">=3.12", dependencies "torch>=2.6.0"; its `te` extra installs transformer-engine[pytorch,core_cu13]).
 */
export const megatronRequirements = { python: '3.12', torch: '2.6' } as const;

/**
 * Whether Transformer Engine runs on the job's GPUs: its CUDA 13 builds, the ones the pinned
 * release's `te` extra installs, compile for sm_75 and newer only (TransformerEngine
 * transformer_engine/common/CMakeLists.txt:25-31 from v2.9: CUDA ≥ 13.0 → 75 80 89 90 100 120),
 * and CUDA 13 itself drops Volta, so a V100 (sm_70) cannot run it.
 */
export const transformerEngineRuns = (system: string): boolean => parseSystem(system).gpu.arch !== 'volta';

/**
 * Profiled steps: Megatron's torch.profiler schedule (training.py:3680-3686 at the pin) waits
 * start − 1 steps, warms up 1 and records end − start, so steps 4 and 5 are traced (ProfilerStep#4,
 * #5), after the first steps' allocation and NCCL set-up; training runs past them.
 */
export const bundleProfile = { stepStart: 4, stepEnd: 6, trainIters: 10 } as const;

/** The run's directory layout: --tensorboard-dir $RUN_DIR/tensorboard puts traces in $RUN_DIR/torch_profile (training.py:3676). */
const traceDirName = 'torch_profile';
/** Where the last rank pickles the allocator history with RECORD_MEMORY=1 (outside the trace directory, whose *.json are traces). */
const memorySnapshotPickle = '$RUN_DIR/memory-snapshot.pickle';

/** A word for bash: as is when plain, double-quoted when it starts with a $VARIABLE (expanded), else single-quoted. */
function shq(x: string): string {
  if (/^[A-Za-z0-9_./:=+-]+$/.test(x)) return x;
  if (/^\$[A-Z_]+[A-Za-z0-9_./-]*$/.test(x)) return `"${x}"`;
  return `'${x.replace(/'/g, `'\\''`)}'`;
}

/** Flag lines of a bash array: one flag and its value per line. */
function arrayLines(args: readonly string[]): string {
  const lines: string[] = [];
  for (const x of args) {
    if (x.startsWith('--') || !lines.length) lines.push(shq(x));
    else lines[lines.length - 1] += ` ${shq(x)}`;
  }
  return lines.map((l) => `  ${l}`).join('\n');
}

/** Nodes of a job: N / GPUs per node (N < GPUs per node: one node running N). Throws when N does not split. */
export function jobNodes(gpus: number, gpusPerNode: number): { nodes: number; perNode: number } {
  if (gpus <= gpusPerNode) return { nodes: 1, perNode: gpus };
  if (gpus % gpusPerNode !== 0)
    throw new Error(
      `${gpus} GPUs do not fill whole nodes of ${gpusPerNode}: choose N as a multiple of ${gpusPerNode}.`,
    );
  return { nodes: gpus / gpusPerNode, perNode: gpusPerNode };
}

/** The Megatron-LM arguments of the bundled job, without data flags (the launch adds mock or real data). */
export function jobArgs(spec: JobSpec): { config: LayerConfig; run: MegatronRun; args: string[] } {
  const s = spec.setup;
  const beyond = [
    (s.pp ?? 1) > 1 && `pipeline parallelism (p = ${s.pp})`,
    (s.vpp ?? 1) > 1 && `virtual stages (${s.vpp})`,
    (s.cp ?? 1) > 1 && `context parallelism (cp = ${s.cp})`,
    s.distributedOptimizer && 'the distributed optimizer',
    s.overlapGradReduce && '--overlap-grad-reduce',
    s.overlapParamGather && '--overlap-param-gather',
    s.recomputation &&
      !(
        s.recomputation.granularity === 'full' &&
        s.recomputation.method === 'uniform' &&
        s.recomputation.layers === 1
      ) &&
      'recompute other than full, uniform, one layer per checkpoint',
    s.tiedEmbeddings && 'tied embeddings',
    s.flashAttention && 'flash attention',
  ].filter((x): x is string => typeof x === 'string');
  if (beyond.length)
    throw new Error(
      `the job bundle writes the playground's layer with TP, SP, DP and full recompute only; this setup also has ${beyond.join(', ')}: leave those out to export it.`,
    );
  const config = { ...setupConfig(spec.setup), ...spec.layer };
  if (transformerImpl(config) === 'transformer_engine' && !transformerEngineRuns(spec.system))
    throw new Error(
      `${parseSystem(spec.system).gpu.label} cannot run this job: sequence parallelism needs the Transformer Engine spec (torch's RMSNorm asserts not sequence_parallel, transformer/torch_norm.py:50), and Transformer Engine's CUDA 13 builds, which Megatron-LM ${megatronRelease.tag} installs, start at sm_75 (Volta is sm_70). Export it without --sp (the local spec, no Transformer Engine), or choose an Ampere or newer system.`,
    );
  const run: MegatronRun = {
    layers: spec.setup.layers,
    globalBatch: spec.setup.globalBatch,
    dtype: spec.dtype,
    recompute: (spec.setup.recompute ?? false) || spec.setup.recomputation?.granularity === 'full',
    trainIters: bundleProfile.trainIters,
  };
  const args = [
    ...megatronModelArgs(config, run),
    // MoE (moe.ts): Megatron's MoE flags, shared with the expert-parallel job's command.
    ...(s.moe ? moeArgv(s.moe, config.tp) : []),
    // Multi-latent attention (mla.ts).
    ...(s.mla ? mlaArgv(s.mla) : []),
    // FSDP (fsdp.ts), with the checkpoint format Megatron-FSDP asserts.
    ...(s.fsdp ? fsdpFlags(s.fsdp) : []),
    ...megatronScheduleArgs(run),
    '--profile',
    '--use-pytorch-profiler',
    '--profile-step-start',
    String(bundleProfile.stepStart),
    '--profile-step-end',
    String(bundleProfile.stepEnd),
    '--tensorboard-dir',
    '$RUN_DIR/tensorboard',
  ];
  return { config, run, args };
}

/** The flags that point the job at real data instead of the mock dataset (arguments.py _add_data_args). */
export const realDataArgs = ['--data-path', '$DATA_PATH', '--split', '969,30,1'] as const;

/**
 * The bundle's files: README.md, megatron-job.json (the manifest), setup.sh (checks out the pin),
 * env.sh (environment and defaults), args.sh (Megatron-LM's arguments as a bash array), launch.sh
 * (torchrun on this node: one node, or node NODE_RANK of NNODES with MASTER_ADDR), job.sbatch
 * (Slurm: one srun task per node running launch.sh) and memory_snapshot_json.py (the allocator
 * history to JSON, memory-snapshot-script.ts). Throws when the setup is illegal or N does not fill
 * whole nodes.
 */
export function jobBundle(spec: JobSpec): BundleFile[] {
  const { config, run, args } = jobArgs(spec);
  const { nodes, perNode } = jobNodes(spec.setup.gpus, spec.gpusPerNode);
  // FSDP asserts CUDA_DEVICE_MAX_CONNECTIONS is not 1 (fsdp.ts); with it t > 1 only warns (arguments.py:1416-1424).
  const fsdp = spec.setup.fsdp;
  const env: Record<string, string> = fsdp ? {} : { CUDA_DEVICE_MAX_CONNECTIONS: '1' };
  const manifest: JobManifest = {
    kind: jobManifestKind,
    name: spec.name,
    megatron: { repository: 'NVIDIA/Megatron-LM', ...megatronRelease },
    system: spec.system,
    dtype: spec.dtype,
    nodes,
    gpusPerNode: perNode,
    command: formatMegatronCommand({
      env,
      launcher: ['torchrun', '--nnodes', String(nodes), '--nproc-per-node', String(perNode)],
      script: 'pretrain_gpt.py',
      args: [...args.map((x) => x.replace('$RUN_DIR', 'run')), '--mock-data'],
    }),
    profile: { traceDir: traceDirName, stepStart: bundleProfile.stepStart, stepEnd: bundleProfile.stepEnd },
  };
  const setupSh = `#!/usr/bin/env bash
# Checks out the Megatron-LM release this job was written and checked for.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -d Megatron-LM ]; then
  git clone https://github.com/${manifest.megatron.repository}.git Megatron-LM
fi
git -C Megatron-LM fetch --tags origin
git -C Megatron-LM checkout --detach ${megatronRelease.commit}   # ${megatronRelease.tag}
`;
  const envSh = `# Environment of the job; sourced by launch.sh. Override any of these before launching.
${
  fsdp
    ? `# FSDP: CUDA_DEVICE_MAX_CONNECTIONS must not be 1 (arguments.py:${fsdp.impl === 'torch' ? '1014-1015' : '1143-1144'}); with FSDP, t > 1 only warns (:1416-1424).
unset CUDA_DEVICE_MAX_CONNECTIONS`
    : `# One hardware queue, so the tensor-parallel collectives run in issue order (arguments.py:1437 requires it for t > 1 before Blackwell).
export CUDA_DEVICE_MAX_CONNECTIONS=1`
}
export NNODES="\${NNODES:-${nodes}}"
export GPUS_PER_NODE="\${GPUS_PER_NODE:-${perNode}}"
export NODE_RANK="\${NODE_RANK:-0}"
export MASTER_ADDR="\${MASTER_ADDR:-localhost}"
export MASTER_PORT="\${MASTER_PORT:-29500}"
export MEGATRON_LM="\${MEGATRON_LM:-$BUNDLE_DIR/Megatron-LM}"
export RUN_DIR="\${RUN_DIR:-$BUNDLE_DIR/run}"
# Empty: the mock dataset. A Megatron .bin/.idx prefix (token ids < ${config.vocab > 0 ? config.vocab : 1}): real data.
export DATA_PATH="\${DATA_PATH:-}"
# 1: record PyTorch's allocator history (its stack capture slows the step: not in a run whose traces are timed).
export RECORD_MEMORY="\${RECORD_MEMORY:-0}"
`;
  const argsSh = `# Megatron-LM ${megatronRelease.tag} arguments of pretrain_gpt.py for this job; sourced by launch.sh.
MEGATRON_ARGS=(
${arrayLines(args)}
)
if [ -n "$DATA_PATH" ]; then
  DATA_ARGS=(${realDataArgs.map(shq).join(' ')})
else
  DATA_ARGS=(--mock-data)
fi
if [ "$RECORD_MEMORY" = 1 ]; then
  MEMORY_ARGS=(${memoryHistoryArgs(memorySnapshotPickle).map(shq).join(' ')})
else
  MEMORY_ARGS=()
fi
`;
  const launchSh = `#!/usr/bin/env bash
# Runs this node's part of the job: torchrun with NNODES, NODE_RANK, MASTER_ADDR (env.sh has the defaults:
# one node). Run it on every node with its NODE_RANK, or let job.sbatch do that under Slurm.
set -euo pipefail
BUNDLE_DIR="$(cd "$(dirname "$0")" && pwd)"
export BUNDLE_DIR
source "$BUNDLE_DIR/env.sh"
source "$BUNDLE_DIR/args.sh"
mkdir -p "$RUN_DIR/${traceDirName}"
cp "$BUNDLE_DIR/${jobManifestFile}" "$RUN_DIR/${traceDirName}/${jobManifestFile}"
cd "$MEGATRON_LM"
torchrun \\
  --nnodes "$NNODES" \\
  --node-rank "$NODE_RANK" \\
  --master-addr "$MASTER_ADDR" \\
  --master-port "$MASTER_PORT" \\
  --nproc-per-node "$GPUS_PER_NODE" \\
  pretrain_gpt.py "\${MEGATRON_ARGS[@]}" "\${DATA_ARGS[@]}" "\${MEMORY_ARGS[@]}"
echo "traces: $RUN_DIR/${traceDirName}/rank-*.json.gz (with ${jobManifestFile}); open them on the playground's #view=trace"
# Megatron pickles the allocator history on the last rank only: convert it on the node that holds it.
LAST_RANK=$((NNODES * GPUS_PER_NODE - 1))
if [ "$RECORD_MEMORY" = 1 ] && [ -e "${memorySnapshotPickle}" ]; then
  python3 "$BUNDLE_DIR/${memorySnapshotScriptName}" "${memorySnapshotPickle}" --rank "$LAST_RANK" -o "$RUN_DIR/${memorySnapshotFile('$LAST_RANK')}"
  echo "memory: $RUN_DIR/${memorySnapshotFile('$LAST_RANK')}; npm run trace -- --memory FILE --job DIR, or drop it with the traces on #view=trace"
fi
`;
  const sbatch = `#!/usr/bin/env bash
#SBATCH --job-name=${shq(spec.name)}
#SBATCH --nodes=${nodes}
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=${perNode}
#SBATCH --exclusive
# One task per node; each runs launch.sh, which starts torchrun's ${perNode} processes there.
set -euo pipefail
# Slurm runs a copy of this script from its spool directory, in the directory sbatch ran in: the
# bundle is where the submitted script was (scontrol show job: Command=, the path sbatch recorded),
# else the submission directory; BUNDLE_DIR set at submission wins.
if [ -z "\${BUNDLE_DIR:-}" ]; then
  submitted="$(scontrol show job "\${SLURM_JOB_ID:-}" 2>/dev/null | sed -n 's/^[[:space:]]*Command=//p' | sed -n 1p || true)"
  for d in "$(dirname "\${submitted:-.}")" "\${SLURM_SUBMIT_DIR:-.}" "$(dirname "$0")"; do
    if [ -f "$d/launch.sh" ]; then BUNDLE_DIR="$(cd "$d" && pwd)"; break; fi
  done
fi
if [ ! -f "\${BUNDLE_DIR:-}/launch.sh" ]; then
  echo "job.sbatch: launch.sh is neither beside the submitted script (\${submitted:-unknown}) nor in the submission directory (\${SLURM_SUBMIT_DIR:-unset}); submit with sbatch --export=ALL,BUNDLE_DIR=/path/to/this/bundle job.sbatch" >&2
  exit 1
fi
MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 1p)"
export MASTER_ADDR
export NNODES="$SLURM_JOB_NUM_NODES"
srun --ntasks-per-node=1 bash -c 'NODE_RANK="$SLURM_NODEID" exec "$0"/launch.sh' "$BUNDLE_DIR"
`;
  const environmentNote =
    transformerImpl(config) === 'transformer_engine'
      ? 'Use a container with Transformer Engine (an NGC PyTorch image): the layers are built from its spec (--transformer-impl transformer_engine) and the final RMSNorm is its TENorm.'
      : transformerEngineRuns(spec.system)
        ? "The layers use the local spec (--transformer-impl local); the final norm is TENorm where Transformer Engine is installed, torch's RMSNorm where neither it nor Apex is (an environment with Apex alone cannot build it)."
        : `The layers use the local spec (--transformer-impl local). On these Volta GPUs use an environment **without** Transformer Engine and without Apex (a PyTorch built for CUDA 12, not an NGC image with CUDA 13): Transformer Engine's CUDA 13 builds start at sm_75, and the final norm would be its TENorm wherever it is installed; with neither, it is torch's RMSNorm.`;
  const caveats = megatronCaveats(config, run)
    .map((c) => `- ${c}`)
    .join('\n');
  const readme = `# Megatron-LM job: ${spec.name}

The playground's configuration as a Megatron-LM training job at \`${megatronRelease.tag}\`
(${megatronRelease.commit}): ${spec.setup.layers} layers, h ${config.h}, ${config.heads} heads
(${config.groups} KV groups), FFN ${config.ffn}, seq ${config.s}, micro-batch ${config.b}, global batch
${spec.setup.globalBatch}, vocabulary ${config.vocab}, t = ${config.tp}${config.sp ? ' with SP' : ''},
${spec.dtype}${spec.setup.recompute ? ', full recompute' : ''}, on ${nodes} node${nodes > 1 ? 's' : ''} × ${perNode} GPUs
(projected on \`${spec.system}\`).

## Run it

1. \`./setup.sh\` clones NVIDIA/Megatron-LM next to this file and checks out the pinned commit.
   ${megatronRelease.tag} needs Python ≥ ${megatronRequirements.python} and PyTorch ≥ ${megatronRequirements.torch} (its \`pyproject.toml\`). ${environmentNote}
2. ${
    nodes > 1
      ? `This directory must be on a filesystem every node sees (each node reads \`launch.sh\`, \`env.sh\`, \`args.sh\` and \`Megatron-LM/\` from it and writes its traces under \`RUN_DIR\`). On each of the ${nodes} nodes: \`NODE_RANK=<0…${nodes - 1}> MASTER_ADDR=<node 0's address> ./launch.sh\``
      : 'On the node: `./launch.sh`'
  }. Slurm: \`sbatch job.sbatch\` from any directory (one \`srun\` task per node, node 0 is the master;
   it finds this directory from the submitted script's path, or set \`BUNDLE_DIR\`).
3. Data: the mock dataset by default. Real data: \`DATA_PATH=/path/to/prefix ./launch.sh\` adds
   \`${realDataArgs.join(' ')}\` (a Megatron \`.bin\`/\`.idx\` prefix whose token ids are below
   ${config.vocab > 0 ? config.vocab : 1}; the tokenizer stays NullTokenizer with this vocabulary size).
4. Environment (\`env.sh\`): \`CUDA_DEVICE_MAX_CONNECTIONS=1\` (unset with FSDP), \`NNODES\`, \`GPUS_PER_NODE\`,
   \`NODE_RANK\`, \`MASTER_ADDR\`, \`MASTER_PORT\`, \`MEGATRON_LM\`, \`RUN_DIR\` (default \`./run\`),
   \`DATA_PATH\`.

## What comes back

The job trains ${bundleProfile.trainIters} steps and the PyTorch profiler records steps
${bundleProfile.stepStart}–${bundleProfile.stepEnd - 1} (\`--profile --use-pytorch-profiler
--profile-step-start ${bundleProfile.stepStart} --profile-step-end ${bundleProfile.stepEnd}\`): every
rank writes \`$RUN_DIR/${traceDirName}/rank-<r>.json.gz\`, and \`launch.sh\` copies
\`${jobManifestFile}\` beside them. Gather every node's \`rank-*.json.gz\` into one directory with the
manifest, then either drop them all on the playground's \`#view=trace\` (the manifest selects this
job's projection, measured vs projected per collective and per step) or run
\`npm run trace -- DIR --job DIR\` in the playground's checkout.

Memory: \`RECORD_MEMORY=1 ./launch.sh\` adds \`--record-memory-history --memory-snapshot-path\`;
Megatron pickles PyTorch's allocator history on the last rank, and \`launch.sh\` converts it with
\`${memorySnapshotScriptName}\` (Python's standard library only) to \`$RUN_DIR/${memorySnapshotFile('<last>')}\`:
\`npm run trace -- --memory FILE --job DIR\`, or the file dropped with the traces on \`#view=trace\`, sets it
beside the projection's memory of that rank's stage. Recording captures a stack per allocation and slows the step: keep it out of a timed run.

## Where Megatron's run differs from the playground's layer

${caveats}
`;
  return [
    { path: 'README.md', text: readme, executable: false },
    { path: jobManifestFile, text: `${JSON.stringify(manifest, null, 2)}\n`, executable: false },
    { path: 'setup.sh', text: setupSh, executable: true },
    { path: 'env.sh', text: envSh, executable: false },
    { path: 'args.sh', text: argsSh, executable: false },
    { path: 'launch.sh', text: launchSh, executable: true },
    { path: 'job.sbatch', text: sbatch, executable: true },
    { path: memorySnapshotScriptName, text: memorySnapshotScript, executable: true },
  ];
}
