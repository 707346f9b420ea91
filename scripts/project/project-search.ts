// `npm run project -- --search`: the advisor over the default search space, printed or as JSON.
import { modelSizesText } from './model-sizes-text.ts';
import type { ProjectArgs } from './project-args.ts';
import {
  advise,
  advisorRejectionText,
  type AdvisorRejection,
  type AdvisorRow,
} from '../../src/projection/studies/advisor.ts';
import { defaultSearchSpace } from '../../src/projection/studies/advisor-space.ts';
import { formatMs } from '../../src/core/format.ts';
import { fsdpLabel } from '../../src/megatron/fsdp.ts';

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
const yes = (b: boolean): string => (b ? 'y' : '·');

/** Columns of the advisor's table and each row's cells. */
const columns = ['t', 'p', 'v', 'cp', 'DP', 'b', 'm', 'SP', 'recompute', 'DO', 'OGR', 'OPG', 'TPO', 'FSDP'];
const rowCells = (r: AdvisorRow, moe: boolean): string[] => {
  const l = r.layout;
  return [
    ...(moe ? [String(l.ep ?? 1), String(l.etp ?? l.tp)] : []),
    String(l.tp),
    String(l.pp),
    String(l.vpp),
    String(l.cp),
    String(r.dp),
    String(l.microBatch),
    String(r.microBatches),
    yes(l.sp),
    l.recompute === 'selective' && l.recomputeModules ? `selective (${l.recomputeModules.join(' ')})` : l.recompute,
    yes(l.distributedOptimizer),
    yes(l.overlapGradReduce),
    yes(l.overlapParamGather),
    yes(l.tpCommOverlap),
    fsdpLabel(l.fsdp),
    formatMs(r.stepMs),
    Math.round(r.tokensPerS).toLocaleString('en-US'),
    r.tflopsPerGpu.toFixed(1),
    pct(r.mfu),
    pct(r.exposedShare),
    `${r.memoryGiB.toFixed(1)} / ${r.capacityGiB.toFixed(0)} GiB`,
  ];
};

/** Runs the advisor for `args` and prints its answer (stdout), or exits 2 with why nothing fits. */
export async function runSearch(args: ProjectArgs): Promise<void> {
  const { sizes, layers, gpus, globalBatch } = args.setup;
  const { b: _b, ...model } = sizes;
  const machine = { system: args.system, dtype: args.dtype, kernels: args.kernels };
  const moe = args.setup.moe;
  const space = defaultSearchSpace(args.system, layers, moe);
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  // Flash attention's memory and tied embeddings as the single projection takes them (--attention-backend flash, --tied-embeddings).
  const extras = {
    flashAttention: args.setup.flashAttention ?? false,
    tiedEmbeddings: args.setup.tiedEmbeddings ?? false,
    ...(args.setup.mla && { mla: args.setup.mla }),
  };
  const r = await advise({ model: { sizes: model, layers, moe }, machine, gpus, globalBatch, extras }, space, {
    k: args.top,
  });
  const seconds = (performance.now() - t0) / 1e3;
  const cpu = process.cpuUsage(cpu0);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  if (args.json) {
    console.log(
      JSON.stringify(
        {
          system: args.system.name,
          dtype: args.dtype,
          model,
          layers,
          gpus,
          globalBatch,
          space,
          seconds,
          cpuSeconds,
          ...r,
        },
        null,
        2,
      ),
    );
    return;
  }
  console.log(`${args.system.label} · ${args.dtype} · advisor over the projection (not a measurement)`);
  console.log(
    `model: ${modelSizesText(model)}, ${layers} layers${moe ? `, ${moe.experts} experts top-${moe.topk} of FFN ${moe.ffn} (${moe.dispatcher})` : ''}; ${gpus} GPUs, global batch ${globalBatch} sequences`,
  );
  console.log(
    `${r.candidates.toLocaleString('en-US')} candidates in ${seconds.toFixed(2)} s wall, ${cpuSeconds.toFixed(2)} s CPU (${r.layersPriced} distinct layers planned and scheduled); ${r.ranked.toLocaleString('en-US')} ranked`,
  );
  console.log('rejected:');
  for (const [why, n] of Object.entries(r.rejected) as [AdvisorRejection, number][])
    if (n > 0) console.log(`  ${String(n).padStart(7)}  ${why}: ${advisorRejectionText[why]}`);
  if (!r.top.length) {
    process.stderr.write('project: no layout fits: every candidate was rejected (see the counts above).\n');
    process.exit(2);
  }
  const head = [
    ...(moe ? ['EP', 'ETP'] : []),
    ...columns,
    'step',
    'tokens/s',
    'TFLOP/s/GPU',
    'MFU',
    'exposed',
    'memory/GPU',
  ];
  const table = [head, ...r.top.map((row) => rowCells(row, moe !== undefined))];
  const widths = head.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  console.log(
    `top ${r.top.length} by step time (DO distributed optimizer, OGR/OPG overlap grad reduce/param gather, TPO TP comm overlap, FSDP Megatron-FSDP strategy or FSDP2):`,
  );
  for (const row of table) console.log(row.map((c, i) => c.padStart(widths[i]!)).join('  '));
}
