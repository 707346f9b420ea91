// Browser edge of the Kineto import: streams a dropped or picked file (plain or gzipped JSON) into
// the reader, decompressing with the platform's DecompressionStream; never one whole string.
import { isGzip } from '../../kineto/kineto-import.ts';
import { KinetoReader, TraceImportError, type FileRead } from '../../kineto/kineto-read.ts';

/** Reads one file; `progress(bytes)` reports the file bytes read so far (compressed bytes for .gz). */
export async function readTraceBlob(file: File, progress: (bytes: number) => void): Promise<FileRead> {
  const gz = isGzip(new Uint8Array(await file.slice(0, 2).arrayBuffer()));
  let read = 0;
  const counted = file.stream().pipeThrough(
    new TransformStream<Uint8Array<ArrayBuffer>, Uint8Array<ArrayBuffer>>({
      transform(chunk, ctl) {
        read += chunk.byteLength;
        progress(read);
        ctl.enqueue(chunk);
      },
    }),
  );
  const bytes: ReadableStream<Uint8Array<ArrayBuffer>> = gz
    ? counted.pipeThrough(new DecompressionStream('gzip'))
    : counted;
  const text = bytes.pipeThrough(new TextDecoderStream());
  const reader = new KinetoReader(file.name);
  const it = text.getReader();
  try {
    for (;;) {
      const { done, value } = await it.read();
      if (done) break;
      reader.push(value);
    }
  } catch (e) {
    if (e instanceof TraceImportError) throw e;
    throw new TraceImportError(
      `${file.name}: ${gz ? 'gzip data is corrupt or truncated' : 'cannot be read'} (${e instanceof Error ? e.message : String(e)}).`,
    );
  } finally {
    it.releaseLock();
  }
  return reader.finish();
}
