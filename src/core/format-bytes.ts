// Byte counts and significant digits as messages and the page print them (pure).

/** Three significant digits, no trailing zeros: 37.40 → "37.4", 96 → "96", 0.1234 → "0.123". */
export function trim(v: number): string {
  return String(Number(v.toPrecision(3)));
}

/** Bytes in binary units: 98304 → "96 KiB", 1536 → "1.5 KiB", 512 → "512 B". */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v : trim(v)} ${units[u]}`;
}
