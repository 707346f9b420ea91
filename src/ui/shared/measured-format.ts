// Text of measured (Kineto) kernels in the timeline: labels and tooltips (pure, no DOM).
import type { CollectiveOp } from '../../comm/collectives.ts';
import type { MeasuredEvent } from '../../kineto/measured-timeline.ts';
import type { NcclCollective } from '../../kineto/nccl-kernel.ts';
import { collectiveName } from './timeline-format.ts';
import { formatBytes, formatMs } from '../../core/format.ts';

const otherNames: Partial<Record<NcclCollective, string>> = {
  reduce: 'reduce',
  sendRecv: 'send/recv',
  allToAll: 'all-to-all',
  gather: 'gather',
  scatter: 'scatter',
  unknown: 'NCCL kernel',
};

/** NCCL-style name of a measured collective: allReduce → "all-reduce", sendRecv → "send/recv". */
export function ncclName(c: NcclCollective): string {
  return otherNames[c] ?? collectiveName(c as CollectiveOp);
}

/** Label candidates, most informative first: a collective "all-reduce ×2 2 MiB", then shorter; a kernel its short name, then cut. */
export function measuredLabels(e: MeasuredEvent): string[][] {
  const n = e.slice.nccl;
  if (n) {
    const name = ncclName(n.collective);
    const size = n.bytes ? ` ${formatBytes(n.bytes)}` : '';
    const group = n.groupSize ? ` ×${n.groupSize}` : '';
    return [[`${name}${group}${size}`], [`${name}${group}`], [name]];
  }
  const cut = e.op.length > 16 ? [[`${e.op.slice(0, 15)}…`]] : [];
  return [[e.op], ...cut];
}

/** Tooltip lines: the kernel's full name (cut at 200 characters), where it ran, the call, duration, exposed part. */
export function measuredTooltip(e: MeasuredEvent): string[] {
  const s = e.slice;
  const name = s.name.length > 200 ? `${s.name.slice(0, 199)}…` : s.name;
  const lines = [
    name,
    `rank ${s.rank} · GPU ${s.device} · stream ${s.gpuStream}${s.step !== undefined ? ` · ProfilerStep#${s.step}` : ''}`,
  ];
  const n = s.nccl;
  if (n) {
    const group = n.groupDesc ?? n.groupName;
    lines.push(
      `${ncclName(n.collective)}${n.groupSize ? ` over ${n.groupSize} ranks` : ''}${group ? ` (${group}${n.groupRanks ? ` ${n.groupRanks}` : ''})` : ''}`,
    );
    const what = [
      n.dtype,
      n.bytes ? formatBytes(n.bytes) : undefined,
      [n.algorithm, n.protocol].filter(Boolean).join('/'),
    ];
    const known = what.filter((x): x is string => !!x);
    if (known.length) lines.push(known.join(' · '));
  }
  lines.push(`duration ${formatMs(e.t1 - e.t0)} (start ${formatMs(e.t0)}; measured)`);
  if (n) lines.push(`exposed ${formatMs(e.exposedMs)} (not covered by a compute kernel of this GPU)`);
  return lines;
}
