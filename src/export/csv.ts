import { formatShape } from '../core/shape.ts';
import type { ScheduledEvent } from '../schedule/schedule.ts';

/** A CSV cell: text or a number (written with JS's shortest round-trip form). */
export type CsvCell = string | number;

/** One field per RFC 4180: quoted when it holds a comma, a double quote, CR or LF; quotes doubled. */
export function csvField(v: CsvCell): string {
  const s = typeof v === 'number' ? (Number.isFinite(v) ? String(v) : '') : v;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** Rows as CSV text (RFC 4180, CRLF line ends), header first. */
export function toCsv(header: readonly string[], rows: readonly (readonly CsvCell[])[]): string {
  return [header, ...rows].map((r) => r.map(csvField).join(',')).join('\r\n') + '\r\n';
}

/** Parses RFC 4180 text (quoted fields, doubled quotes, CRLF or LF line ends) into rows of strings. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(field);
      field = '';
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += ch;
  }
  if (field !== '' || row.length) rows.push([...row, field]);
  return rows;
}

/** Columns of `timelineCsv`: times in ms, FLOPs, bytes, GFLOP/s = flops / (dur_ms·1e6). */
export const timelineCsvHeader = [
  'rank',
  'op_index',
  'op',
  'pass',
  'kind',
  'stream',
  'kernel',
  't0_ms',
  't1_ms',
  'dur_ms',
  'wait_ms',
  'exposed_ms',
  'shapes',
  'M',
  'N',
  'K',
  'batch',
  'flops',
  'gflop_per_s',
  'collective',
  'group_size',
  'payload_bytes',
  'ring_bytes_sent',
  'mapping',
  'role',
  'split',
  'weight',
  'megatron',
] as const;

/** One row per op per rank (by rank, then op index) of a schedule, with `timelineCsvHeader`. */
export function timelineCsv(events: readonly ScheduledEvent[]): string {
  const sorted = [...events].sort((a, b) => a.rank - b.rank || a.opIndex - b.opIndex);
  const rows = sorted.map((e): CsvCell[] => {
    const dur = e.t1 - e.t0;
    const g = e.gemm;
    const c = e.collective;
    return [
      e.rank,
      e.opIndex,
      e.op,
      e.phase,
      e.kind,
      e.stream,
      e.kernel ?? '',
      e.t0,
      e.t1,
      dur,
      e.waitMs,
      e.exposedMs,
      e.inShapes.map(formatShape).join(' · ') + ` → ${formatShape(e.outShape)}`,
      g?.M ?? '',
      g?.N ?? '',
      g?.K ?? '',
      g?.batch ?? '',
      e.flops ?? 0,
      e.stream === 'compute' && dur > 0 && e.flops ? e.flops / (dur * 1e6) : '',
      c?.op ?? '',
      c?.groupSize ?? '',
      c?.payloadBytes ?? '',
      c?.ringBytesSent ?? '',
      c?.mapping ?? '',
      e.role,
      e.split,
      e.weight ?? '',
      e.megatron,
    ];
  });
  return toCsv(timelineCsvHeader, rows);
}
