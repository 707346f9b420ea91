// Node edge of the Kineto import: streams a .json or .json.gz trace file from disk into the reader
// (gzip found by its magic number, decompressed with zlib), never holding the whole text.
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { basename } from 'node:path';
import { createGunzip } from 'node:zlib';
import { isGzip } from '../../src/kineto/kineto-import.ts';
import { KinetoReader, TraceImportError, type FileRead } from '../../src/kineto/kineto-read.ts';

/** Reads one trace file (plain or gzipped JSON). Throws TraceImportError naming the file and what is wrong. */
export async function readTraceFile(path: string): Promise<FileRead> {
  const name = basename(path);
  let head: Uint8Array;
  try {
    const fh = await open(path, 'r');
    try {
      const buf = new Uint8Array(2);
      const { bytesRead } = await fh.read(buf, 0, 2, 0);
      head = buf.subarray(0, bytesRead);
    } finally {
      await fh.close();
    }
  } catch (e) {
    throw new TraceImportError(`${path}: cannot be read (${(e as NodeJS.ErrnoException).code ?? String(e)}).`);
  }
  const reader = new KinetoReader(name);
  const raw = createReadStream(path);
  const stream = isGzip(head) ? raw.pipe(createGunzip()) : raw;
  stream.setEncoding('utf8');
  try {
    for await (const chunk of stream) reader.push(chunk as string);
  } catch (e) {
    if (e instanceof TraceImportError) throw e;
    throw new TraceImportError(
      `${name}: ${isGzip(head) ? 'gzip data is corrupt or truncated' : 'cannot be read'} (${e instanceof Error ? e.message : String(e)}).`,
    );
  } finally {
    raw.destroy();
    stream.destroy();
  }
  return reader.finish();
}
