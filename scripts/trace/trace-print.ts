// Text tables of a measured job for `npm run trace`.
import { alignedTable } from '../cli/text-table.ts';
import type { MeasuredTrace } from '../../src/kineto/kineto-types.ts';
import type { CollectiveTotal, MeasuredAnalysis, RankWindow } from '../../src/kineto/measured-analysis.ts';
import { formatBytes, formatMs } from '../../src/core/format.ts';

const pct = (x: number | null): string => (x === null ? '—' : `${(100 * x).toFixed(1)}%`);

const rankRow = (w: RankWindow, file = ''): string[] => [
  String(w.rank),
  ...(file ? [file] : []),
  formatMs(w.t1 - w.t0),
  formatMs(w.computeMs),
  formatMs(w.commMs),
  formatMs(w.exposedMs),
  pct(w.overlap),
  formatMs(w.memoryMs),
  String(w.kernels),
];

const collectiveRows = (cs: readonly CollectiveTotal[]): string[][] =>
  cs.map((c) => [
    c.collective,
    c.group || '—',
    String(c.count),
    formatMs(c.ms),
    formatMs(c.exposedMs),
    c.bytes ? formatBytes(c.bytes) : '—',
  ]);

/** The per-rank analysis, per-collective totals, steps and notes, as lines of text. */
export function traceReport(trace: MeasuredTrace, a: MeasuredAnalysis): string[] {
  const out: string[] = [];
  const r0 = trace.ranks[0]!;
  const gpus = [...new Set(trace.ranks.flatMap((r) => r.deviceNames))];
  out.push(
    `${trace.ranks.length} rank${trace.ranks.length > 1 ? 's' : ''} (rank numbers from ${r0.rankSource})${r0.worldSize ? ` of a world of ${r0.worldSize}` : ''}${gpus.length ? ` on ${gpus.join(', ')}` : ''}`,
  );
  out.push('exposed = NCCL kernel time no compute kernel of the same GPU covers; overlap = 1 − exposed/comm');
  out.push('');
  out.push(
    ...alignedTable(
      ['rank', 'file', 'span', 'compute', 'comm', 'exposed', 'overlap', 'memcpy/set', 'kernels'],
      a.ranks.map((w) => rankRow(w, trace.ranks.find((r) => r.rank === w.rank)!.file)),
    ),
  );
  out.push('', 'per collective, all ranks (Σ kernel time; an NCCL kernel waits for its slowest peer):');
  out.push(
    ...alignedTable(['collective', 'group', 'calls', 'time', 'exposed', 'bytes'], collectiveRows(a.collectives)),
  );
  if (a.steps.length) {
    out.push(
      '',
      'per ProfilerStep (slowest: longest GPU span; straggler: the last rank into the collectives, the one the others wait for):',
    );
    out.push(
      ...alignedTable(
        ['step', 'slowest', 'span', 'straggler', ...a.ranks.map((r) => `exposed r${r.rank}`)],
        a.steps.map((s) => [
          `#${s.step}`,
          `rank ${s.slowestRank}`,
          formatMs(s.spanMs),
          s.straggler === null ? 'none' : `rank ${s.straggler} (caused ${formatMs(s.stragglerCausedMs)})`,
          ...a.ranks.map((r) => {
            const w = s.ranks.find((x) => x.rank === r.rank);
            return w ? formatMs(w.exposedMs) : '—';
          }),
        ]),
      ),
    );
  } else out.push('', 'no ProfilerStep#N annotations: the whole trace is one window.');
  const notes = [
    ...trace.notes,
    ...trace.ranks.flatMap((r) => r.notes.map((n) => `${r.file}: ${n}`)),
    ...trace.ranks.map((r) => {
      const dropped = Object.entries(r.stats.dropped)
        .sort((x, y) => y[1] - x[1])
        .map(([k, v]) => `${k} ${v}`);
      return `${r.file}: kept ${r.stats.kept} GPU events of ${r.stats.events}${dropped.length ? `; dropped ${dropped.join(', ')}` : ''}`;
    }),
  ];
  out.push('', 'notes:', ...notes.map((n) => `  - ${n}`));
  return out;
}
