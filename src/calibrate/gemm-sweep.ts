// The GEMM sweep's files: the shapes the job bundle asks for (gemm-shapes.csv) and what the
// bundle's script writes back (gemm-sweep.csv), one GEMM per row. The script
// (gemm-sweep-script.ts) writes exactly these columns.
import { quoted } from '../core/quote.ts';
import type { MeasuredGemm } from '../hardware/calibrated-rates.ts';
import type { GemmPrecision } from '../hardware/gpus.ts';

/** gemm-shapes.csv: one GEMM [M,K]·[K,N] × batch in a precision, named by the plan's op. */
export const gemmShapeColumns = ['label', 'm', 'n', 'k', 'batch', 'dtype'] as const;
/** gemm-sweep.csv: the shape's columns, then the median µs per call, the TFLOP/s it implies, and the GPU's name. */
export const gemmSweepColumns = [...gemmShapeColumns, 'us', 'tflops', 'device'] as const;

/** The sweep's file names in the bundle and in a calibration directory. */
export const gemmShapesFile = 'gemm-shapes.csv';
export const gemmSweepFile = 'gemm-sweep.csv';

const precisions: readonly GemmPrecision[] = ['fp32', 'fp16', 'bf16', 'fp8'];

/** A GEMM to time, with the label of the plan op it prices. */
export interface SweepShape {
  readonly label: string;
  readonly M: number;
  readonly N: number;
  readonly K: number;
  readonly batch: number;
  readonly precision: GemmPrecision;
}

/** gemm-shapes.csv's text for `shapes` (header, then one row each). */
export function gemmShapesCsv(shapes: readonly SweepShape[]): string {
  const rows = shapes.map((s) => [s.label, s.M, s.N, s.K, s.batch, s.precision].join(','));
  return `${[gemmShapeColumns.join(','), ...rows].join('\n')}\n`;
}

/** One measured row of gemm-sweep.csv. */
export interface SweepRow extends MeasuredGemm {
  readonly label: string;
  readonly device: string;
}

/**
 * Reads gemm-sweep.csv: the header must be `gemmSweepColumns`; M, N, K, batch whole and ≥ 1, the
 * dtype one of fp32, fp16, bf16, fp8, µs > 0. Throws naming the line and the field.
 */
export function parseGemmSweep(text: string, source = gemmSweepFile): SweepRow[] {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== '');
  const head = lines[0]?.split(',').map((h) => h.trim());
  if (!head || head.join(',') !== gemmSweepColumns.join(','))
    throw new Error(
      `${source}: the first line must be the header ${gemmSweepColumns.join(',')} (the bundle's gemm_sweep.py writes it), got ${quoted(lines[0] ?? '', 80)}.`,
    );
  return lines.slice(1).map((line, i) => {
    const at = `${source} line ${i + 2}`;
    const f = line.split(',').map((x) => x.trim());
    if (f.length !== gemmSweepColumns.length)
      throw new Error(
        `${at}: ${f.length} fields where the header has ${gemmSweepColumns.length}: ${quoted(line, 80)}.`,
      );
    const [label, m, n, k, batch, dtype, us, , device] = f as [string, ...string[]];
    const whole = (name: string, v: string | undefined): number => {
      const x = Number(v);
      if (!(Number.isInteger(x) && x >= 1))
        throw new Error(`${at}: ${name} must be a whole number ≥ 1, got ${quoted(v ?? '')}.`);
      return x;
    };
    if (!precisions.includes(dtype as GemmPrecision))
      throw new Error(`${at}: dtype must be one of ${precisions.join(', ')}, got ${quoted(dtype ?? '')}.`);
    const time = Number(us);
    if (!(Number.isFinite(time) && time > 0))
      throw new Error(`${at}: us must be a number > 0, got ${quoted(us ?? '')}.`);
    return {
      label,
      M: whole('m', m),
      N: whole('n', n),
      K: whole('k', k),
      batch: whole('batch', batch),
      precision: dtype as GemmPrecision,
      us: time,
      device: device ?? '',
    };
  });
}
