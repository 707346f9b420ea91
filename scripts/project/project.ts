// npm run project -- --system NAME [--preset NAME] [size flags] --layers L --gpus N --tp 1,2,4,8 [--pp P --vpp V --cp CP] [--sp] [--dtype fp16|bf16|fp32] [--json] [--search [--top K]] [--ablate]
// Projects the layer × L onto a real cluster, in Node (no browser): the fixed-budget table over t.
import { modelSizesText } from './model-sizes-text.ts';
import { alignedTable } from '../cli/text-table.ts';
import { fixedBudget } from '../../src/projection/step/cluster-projection.ts';
import { gemmTable } from '../../src/projection/layer/gemm-table.ts';
import { linearPrecisionOf } from '../../src/projection/layer/kernel-options.ts';
import { budgetLines, type BudgetLine } from '../../src/projection/step/cluster-summary.ts';
import { recomputeOf } from '../../src/megatron/training-setup.ts';
import { formatMs } from '../../src/core/format.ts';
import { lowPrecisionLines } from './low-precision-report.ts';
import { exportJobSpec, gemmSweepFiles, writeJobBundle } from './export-job.ts';
import { parseProjectArgs, usage, type ProjectArgs } from './project-args.ts';
import { runSearch } from './project-search.ts';
import { topologyReport } from './project-topology.ts';
import { runAblation } from './project-ablate.ts';
import { exitAfterFlush } from '../cli/exit-after-flush.ts';
import { runCalibration } from './project-calibrate.ts';
import { mlaLines } from './mla-args.ts';
import { moeLines, moeSummary } from './moe-report.ts';
import { cudaGraphLine } from './cuda-graph-report.ts';

function fail(message: string): never {
  process.stderr.write(`project: ${message}\n${usage()}\n`);
  process.exit(2);
}

let args: ProjectArgs;
try {
  args = parseProjectArgs(process.argv.slice(2));
} catch (e) {
  fail((e as Error).message);
}
if (args.help) {
  console.log(usage());
  await exitAfterFlush(0);
}
if (args.hfConfig) {
  const { from, model } = args.hfConfig;
  const lines = [`model from ${from}${model.modelType ? ` (${model.modelType})` : ''}`, ...model.notes];
  if (model.unknownFields.length) lines.push(`unknown fields, not read: ${model.unknownFields.join(', ')}`);
  process.stderr.write(`${lines.join('\n')}\n`);
}

if (args.exportJob !== undefined) {
  let written: string[];
  try {
    const spec = exportJobSpec(args);
    written = await writeJobBundle(args.exportJob, spec, await gemmSweepFiles(args, spec));
  } catch (e) {
    fail((e as Error).message);
  }
  console.log(`job bundle written: ${written.join(', ')}`);
  await exitAfterFlush(0);
}

if (args.gemmTable) {
  const precision = linearPrecisionOf(args.kernels, args.dtype);
  console.log(`GEMM model on ${args.system.gpu.label} in ${precision} (docs/projection-kernels.md)`);
  const rows = gemmTable(args.system.gpu, precision).map((r) => [
    r.label,
    `${r.shape.M}×${r.shape.N}×${r.shape.K}`,
    `${r.time.us.toFixed(1)} µs`,
    r.tflops.toFixed(0),
    `${(100 * r.time.efficiency).toFixed(1)}%`,
    `${r.time.tile[0]}×${r.time.tile[1]}`,
    String(r.time.tiles),
    String(r.time.waves),
  ]);
  const head = ['shape', 'M×N×K', 'time', 'TFLOP/s', 'of peak', 'tile', 'tiles', 'waves'];
  for (const line of alignedTable(head, rows)) console.log(line);
  await exitAfterFlush(0);
}

const reports = [
  args.ablate && '--ablate',
  args.search && '--search',
  args.topology && '--topology',
  args.calibrate !== undefined && '--calibrate',
].filter(Boolean);
if (reports.length > 1) fail(`${reports.join(' and ')} are separate reports: give one of them.`);

if (args.calibrate !== undefined) {
  try {
    for (const line of await runCalibration(args, args.calibrate)) console.log(line);
  } catch (e) {
    fail((e as Error).message);
  }
  await exitAfterFlush(0);
}

if (args.ablate) {
  await runAblation(args);
  await exitAfterFlush(0);
}

if (args.search) {
  await runSearch(args);
  await exitAfterFlush(0);
}

if (args.topology) {
  try {
    for (const line of await topologyReport(args)) console.log(line);
  } catch (e) {
    fail((e as Error).message);
  }
  await exitAfterFlush(0);
}

const machine = { system: args.system, dtype: args.dtype, kernels: args.kernels };
const rows = await fixedBudget(args.setup, args.degrees, machine);
// The no-SP baseline runs without --tp-comm-overlap, which needs SP.
const noSpMachine = { ...machine, kernels: { ...args.kernels, tpCommOverlap: false } };
const baseline = args.setup.sp ? await fixedBudget({ ...args.setup, sp: false }, args.degrees, noSpMachine) : undefined;
const lines = budgetLines(rows, baseline);
if (lines.every((l) => !l.ok)) {
  for (const l of lines) if (!l.ok) process.stderr.write(`project: t=${l.tp}: ${l.reason}\n`);
  process.exit(2);
}

const { sizes, layers, gpus, globalBatch, sp } = args.setup;
const recomputation = recomputeOf({ ...args.setup, tp: 1 });
const header = {
  system: args.system.label,
  gpu: args.system.gpu.label,
  dtype: args.dtype,
  model: { ...sizes, layers },
  gpus,
  globalBatch,
  sp,
  pp: args.setup.pp ?? 1,
  vpp: args.setup.vpp ?? 1,
  cp: args.setup.cp ?? 1,
  recompute: recomputation ?? false,
  distributedOptimizer: args.setup.distributedOptimizer ?? false,
  overlapGradReduce: args.setup.overlapGradReduce ?? false,
  overlapParamGather: args.setup.overlapParamGather ?? false,
  tiedEmbeddings: args.setup.tiedEmbeddings ?? false,
  flashAttention: args.setup.flashAttention ?? false,
  kernels: args.kernels,
  note: 'projection from datasheet figures and the alpha-beta link model, not a measurement',
};
if (args.json) {
  const timeline = args.memoryTimeline
    ? { memoryTimeline: rows.flatMap((r) => (r.ok ? [{ tp: r.tp, stages: r.step.stageMemory }] : [])) }
    : {};
  const moe = rows.some((r) => r.ok && r.step.moe)
    ? { moe: rows.flatMap((r) => (r.ok && r.step.moe ? [{ tp: r.tp, ...moeSummary(r.step) }] : [])) }
    : {};
  console.log(JSON.stringify({ ...header, moe: args.setup.moe, rows: lines, ...moe, ...timeline }, null, 2));
  await exitAfterFlush(0);
}

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
const recomputeLabel = !recomputation
  ? ''
  : recomputation.granularity === 'selective'
    ? ', selective recompute'
    : `, full recompute (${recomputation.method}, ${recomputation.layers})`;
const signed = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}%`;
console.log(`${header.system} · ${args.dtype} · ${header.note}`);
console.log(
  `model: ${modelSizesText(sizes)}, ${layers} layers; ` +
    `${gpus} GPUs, global batch ${globalBatch} sequences${sp ? ', SP' : ''}${recomputeLabel}` +
    `${header.pp > 1 ? `, p ${header.pp}${header.vpp > 1 ? ` × v ${header.vpp}` : ''}` : ''}${header.cp > 1 ? `, cp ${header.cp}` : ''}` +
    `${header.distributedOptimizer ? ', distributed optimizer' : ''}${header.overlapGradReduce ? ', overlapped grad reduce' : ''}` +
    `${header.overlapParamGather ? ', overlapped param gather' : ''}${header.flashAttention ? ', flash attention' : ''}${header.tiedEmbeddings ? ', tied embeddings' : ''}`,
);
const first = lines.find((l) => l.ok);
if (first?.ok && first.pp > 1)
  console.log(
    `pipeline: layers per stage ${first.stageLayers.join(', ')}; parameters per stage (M) ${first.stageParams.map((p) => (p / 1e6).toFixed(1)).join(', ')}`,
  );
/** fp8 or fp4 GEMMs: MFU against that peak, and beside it against the training dtype's. */
const lowPrecision = linearPrecisionOf(args.kernels, args.dtype);
const fp8Gemms = lowPrecision !== args.dtype;
const cols = [
  't',
  'DP',
  'm',
  'step',
  'tokens/s',
  'TFLOP/s/GPU',
  ...(fp8Gemms ? [`MFU (${lowPrecision})`, `MFU (${args.dtype})`] : ['MFU']),
  'exec MFU',
  'bubble',
  'exposed',
  'memory/GPU',
  ...(sp ? ['vs no SP'] : []),
];
const cells = (l: BudgetLine): string[] =>
  l.ok
    ? [
        String(l.tp),
        String(l.dp),
        String(l.microBatches),
        formatMs(l.stepMs),
        Math.round(l.tokensPerS).toLocaleString('en-US'),
        l.tflopsPerGpu.toFixed(1),
        pct(l.mfu),
        ...(fp8Gemms ? [pct(l.trainDtypeMfu)] : []),
        pct(l.executedMfu),
        pct(l.bubbleShare),
        `${formatMs(l.exposedMs)} (${pct(l.exposedShare)})`,
        `${l.memoryGiB.toFixed(3)} GiB${l.oom ? ` OOM > ${l.capacityGiB} GiB` : ''}`,
        ...(l.vsNoSp ? [`${signed(l.vsNoSp.throughput)} tok/s, ${signed(l.vsNoSp.memory)} mem`] : sp ? ['—'] : []),
      ]
    : [String(l.tp), `illegal: ${l.reason}`];
const table = [cols, ...lines.map(cells)];
const widths = cols.map((_, i) => Math.max(...table.filter((r) => r.length > 2).map((r) => (r[i] ?? '').length)));
for (const r of table) console.log(r.length > 2 ? r.map((c, i) => c.padStart(widths[i]!)).join('  ') : r.join('  '));
for (const r of rows) {
  const m = r.ok ? moeSummary(r.step) : undefined;
  if (m) for (const line of moeLines(r.tp, m)) console.log(line);
  if (r.ok && r.step.mla) for (const line of mlaLines(r.tp, r.step.mla)) console.log(line);
  if (r.ok && r.step.cudaGraphs) console.log(cudaGraphLine(r.tp, r.step.cudaGraphs));
  if (r.ok) for (const line of lowPrecisionLines(r.tp, r.step)) console.log(line);
}
