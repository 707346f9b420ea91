// Runs in the bench page (scripts/bench/bench-first-touch.ts imports it through scripts/device/browser-run.ts).
import { median } from '../../src/core/stats.ts';

/** How a result array is written in one timed sample. */
export type FirstTouchMode = 'reused' | 'fresh' | 'fill' | 'alloc' | 'kept';

/** Arguments of runFirstTouch. */
export interface FirstTouchArgs {
  readonly sizes: readonly number[];
  readonly workers: readonly number[];
  readonly iters: number;
  readonly onProgress?: (line: string) => void;
}

/** One measured cell: the median time (ms) of one sample per worker, all workers at once. */
export interface FirstTouchRow {
  readonly workers: number;
  readonly bytes: number;
  readonly mode: FirstTouchMode;
  readonly msPerWorker: readonly number[];
}

// The worker: each sample writes one result of n float32 from a view of shared memory (the ring's
// slots), as a collective's gather does. reused: into one array made before; fresh: into a new
// array; fill: a new array filled with a constant (the same first touch, no source read); alloc:
// a new array, unwritten; kept: as fresh, every result kept alive until the series ends.
const workerSource = `
onmessage = (e) => {
  const { n, iters, mode, sab } = e.data;
  const src = new Float32Array(sab, 0, n);
  const reused = new Float32Array(n);
  reused.set(src);
  const kept = [];
  const times = [];
  for (let i = 0; i < iters; i++) {
    const t0 = performance.now();
    if (mode === 'reused') reused.set(src);
    else if (mode === 'fresh') new Float32Array(n).set(src);
    else if (mode === 'fill') new Float32Array(n).fill(1);
    else if (mode === 'alloc') new Float32Array(n);
    else kept.push(new Float32Array(n)), kept[kept.length - 1].set(src);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  postMessage(times[times.length >> 1]);
};`;

/** Times writing a result array of each size per mode, in 1 or more workers of this page at once. */
export async function runFirstTouch(args: FirstTouchArgs): Promise<FirstTouchRow[]> {
  const url = URL.createObjectURL(new Blob([workerSource], { type: 'text/javascript' }));
  const sab = new SharedArrayBuffer(Math.max(...args.sizes));
  new Float32Array(sab).fill(2);
  const rows: FirstTouchRow[] = [];
  for (const w of args.workers) {
    const workers = Array.from({ length: w }, () => new Worker(url));
    try {
      for (const bytes of args.sizes)
        for (const mode of ['reused', 'fresh', 'fill', 'alloc', 'kept'] as const) {
          const msPerWorker = await Promise.all(
            workers.map(
              (wk) =>
                new Promise<number>((resolve) => {
                  wk.onmessage = (e: MessageEvent<number>) => resolve(e.data);
                  wk.postMessage({ n: bytes / 4, iters: args.iters, mode, sab });
                }),
            ),
          );
          rows.push({ workers: w, bytes, mode, msPerWorker });
          args.onProgress?.(`${w} worker(s), ${bytes} B, ${mode}: median ${median(msPerWorker).toFixed(2)} ms`);
        }
    } finally {
      workers.forEach((x) => x.terminate());
    }
  }
  URL.revokeObjectURL(url);
  return rows;
}
