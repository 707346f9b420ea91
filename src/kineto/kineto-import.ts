// Entry points of the Kineto import: text (or text chunks) of one file per rank → one measured job.
// Decompression stays at the edges (zlib in the CLI, DecompressionStream in the page's worker).
import { assembleJob } from './kineto-job.ts';
import { KinetoReader, type FileRead } from './kineto-read.ts';
import type { MeasuredTrace } from './kineto-types.ts';

/** True when `head` (a file's first bytes) starts with the gzip magic number 1f 8b (RFC 1952 §2.3.1). */
export function isGzip(head: Uint8Array): boolean {
  return head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b;
}

/** Reads one file from its whole text (fed to the reader in pieces of `chunk` characters). */
export function readKinetoText(file: string, text: string, chunk = 1 << 20): FileRead {
  const reader = new KinetoReader(file);
  for (let i = 0; i < text.length; i += chunk) reader.push(text.slice(i, i + chunk));
  return reader.finish();
}

/** The job of several files given as text, one per rank. Throws TraceImportError with the reason. */
export function importKinetoTexts(files: readonly { name: string; text: string }[]): MeasuredTrace {
  return assembleJob(files.map((f) => readKinetoText(f.name, f.text)));
}
