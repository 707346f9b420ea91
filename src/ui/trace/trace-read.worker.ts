// Worker that reads Kineto trace files off the page's thread and analyses them (the page stays responsive).
import * as Comlink from 'comlink';
import { assembleJob } from '../../kineto/kineto-job.ts';
import type { FileRead } from '../../kineto/kineto-read.ts';
import type { MeasuredTrace } from '../../kineto/kineto-types.ts';
import { analyseMeasured, type MeasuredAnalysis } from '../../kineto/measured-analysis.ts';
import { readTraceBlob } from './trace-blob-read.ts';

/** Progress of a read: the file being read and the bytes read of all files. */
export interface TraceReadProgress {
  readonly file: string;
  readonly bytes: number;
  readonly totalBytes: number;
}

/** A job read and analysed. */
export interface TraceLoad {
  readonly trace: MeasuredTrace;
  readonly analysis: MeasuredAnalysis;
  /** Wall time of reading and analysing, ms (this browser, this machine). */
  readonly readMs: number;
}

const api = {
  /** Reads `files` (one per rank) and analyses them; throws TraceImportError's message on bad input. */
  async read(files: File[], progress: (p: TraceReadProgress) => void): Promise<TraceLoad> {
    const started = performance.now();
    const totalBytes = files.reduce((a, f) => a + f.size, 0);
    let before = 0;
    let last = 0;
    const reads: FileRead[] = [];
    for (const f of files) {
      reads.push(
        await readTraceBlob(f, (bytes) => {
          const now = performance.now();
          if (now - last < 100) return;
          last = now;
          progress({ file: f.name, bytes: before + bytes, totalBytes });
        }),
      );
      before += f.size;
    }
    const trace = assembleJob(reads);
    return { trace, analysis: analyseMeasured(trace), readMs: performance.now() - started };
  },
};

/** The worker's interface (for Comlink.wrap). */
export type TraceReader = typeof api;

Comlink.expose(api);
