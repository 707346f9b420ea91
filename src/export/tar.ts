// A POSIX ustar archive of text files (IEEE Std 1003.1, pax "ustar" interchange format): the job
// bundle as one download from the page, unpacked with `tar -xf` keeping the scripts executable.

/** One file of an archive: its path (≤ 100 bytes), its text (UTF-8) and whether it is executable. */
export interface TarEntry {
  readonly path: string;
  readonly text: string;
  readonly executable: boolean;
}

const block = 512;
const enc = new TextEncoder();

/** Writes `value` as `width − 1` octal digits and a NUL into `h` at `at`. */
function octal(h: Uint8Array, at: number, width: number, value: number): void {
  h.set(enc.encode(`${value.toString(8).padStart(width - 1, '0')}\0`), at);
}

/** The 512-byte ustar header of a regular file or a directory. */
function header(path: string, size: number, mode: number, type: '0' | '5', mtime: number): Uint8Array {
  const name = enc.encode(path);
  if (name.length > 100) throw new Error(`tar: path "${path}" is longer than 100 bytes.`);
  const h = new Uint8Array(block);
  h.set(name, 0);
  octal(h, 100, 8, mode);
  octal(h, 108, 8, 0); // uid
  octal(h, 116, 8, 0); // gid
  octal(h, 124, 12, size);
  octal(h, 136, 12, mtime);
  h.fill(0x20, 148, 156); // checksum counted as spaces
  h[156] = type.charCodeAt(0);
  h.set(enc.encode('ustar\0'), 257);
  h.set(enc.encode('00'), 263);
  const sum = h.reduce((a, x) => a + x, 0);
  h.set(enc.encode(`${sum.toString(8).padStart(6, '0')}\0 `), 148);
  return h;
}

/**
 * The archive of `entries` under the directory `root` (a directory entry, then each file as
 * root/path with mode 0755 or 0644), closed by two zero blocks. `mtime`: seconds since 1970.
 */
export function tarArchive(root: string, entries: readonly TarEntry[], mtime: number): Uint8Array {
  const parts: Uint8Array[] = [header(`${root}/`, 0, 0o755, '5', mtime)];
  for (const e of entries) {
    const data = enc.encode(e.text);
    parts.push(header(`${root}/${e.path}`, data.length, e.executable ? 0o755 : 0o644, '0', mtime));
    const padded = new Uint8Array(Math.ceil(data.length / block) * block);
    padded.set(data);
    parts.push(padded);
  }
  parts.push(new Uint8Array(2 * block));
  const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
