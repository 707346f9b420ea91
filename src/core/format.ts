// Numbers in their units as messages, the CLIs and the page print them (pure): significant digits,
// bytes, times, time-axis ticks, FLOPs.

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

/**
 * Milliseconds in the unit that reads best: 0.0374 → "37.4 µs", 7.746 → "7.75 ms", 1234 → "1.23 s".
 * The unit is chosen after rounding to three digits, so 999.6 reads "1 s", never "1000 ms".
 */
export function formatMs(ms: number): string {
  const a = Number(Math.abs(ms).toPrecision(3));
  if (a === 0) return '0 ms';
  if (a < 1e-3) return `${trim(ms * 1e6)} ns`;
  if (a < 1) return `${trim(ms * 1e3)} µs`;
  if (a < 1000) return `${trim(ms)} ms`;
  return `${trim(ms / 1000)} s`;
}

/**
 * The tick format of a time axis over `domain` (ms): every tick in the unit formatMs gives the
 * domain's largest |end| ("0 µs … 250 µs", never "0 ms" beside "50 µs"), three significant digits
 * — or, given the axis's `ticks`, as many decimals as their step needs where three digits would
 * print two ticks alike (zoomed to 0.1 µs inside a 400 ms step: "123.4501 ms", "123.4502 ms").
 */
export function msTickFormat(domain: readonly number[], ticks: readonly number[] = []): (ms: number) => string {
  const a = Number(Math.max(0, ...domain.map(Math.abs)).toPrecision(3));
  const [per, unit] = a < 1e-3 ? [1e6, 'ns'] : a < 1 ? [1e3, 'µs'] : a < 1000 ? [1, 'ms'] : [1e-3, 's'];
  const short = ticks.map((t) => trim(t * per));
  if (new Set(short).size === short.length) return (ms) => `${trim(ms * per)} ${unit}`;
  const step = Math.min(
    ...ticks
      .slice(1)
      .map((t, i) => Math.abs(t - ticks[i]) * per)
      .filter((d) => d > 0),
  );
  const decimals = Math.min(12, Math.max(0, Math.ceil(-Math.log10(step) - 1e-9)));
  return (ms) => `${(ms * per).toFixed(decimals)} ${unit}`;
}

/** A change of time with its sign: +1.2 ms, −37.1 ms, 0. */
export const formatSignedMs = (ms: number): string =>
  ms > 0 ? `+${formatMs(ms)}` : ms < 0 ? `−${formatMs(-ms)}` : '0';

/** FLOPs with an SI prefix: 37748736 → "37.7 MFLOP"; the prefix chosen after rounding, so 999,600 reads "1 MFLOP". */
export function formatFlops(flops: number): string {
  const prefixes = ['', 'k', 'M', 'G', 'T', 'P'];
  let v = flops;
  let p = 0;
  while (Math.abs(Number(v.toPrecision(3))) >= 1000 && p < prefixes.length - 1) {
    v /= 1000;
    p++;
  }
  return `${trim(v)} ${prefixes[p]}FLOP`;
}

/** GFLOP/s of `flops` done in `ms`; 0 when the time is 0. */
export function gflopsPerSecond(flops: number, ms: number): number {
  return ms > 0 ? flops / ms / 1e6 : 0;
}
