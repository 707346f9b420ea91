import { readFileSync } from 'node:fs';

/** The aggregate "cpu" line of /proc/stat: jiffies per state (user nice system idle iowait irq softirq steal …). */
type CpuJiffies = number[];

function readCpu(): CpuJiffies | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
    return line.startsWith('cpu ') ? line.trim().split(/\s+/).slice(1, 9).map(Number) : undefined;
  } catch {
    return undefined; // not Linux
  }
}

/**
 * Starts measuring CPU steal (time this virtual machine was runnable but its host ran other guests;
 * proc(5), /proc/stat field 8). The returned function gives the share of CPU time stolen since the
 * start (0–1), or undefined where /proc/stat is missing. Benchmarks print it: under steal every
 * kernel slows by an amount that varies second by second, so ratios taken then are noisier.
 */
export function startStealMeter(): () => number | undefined {
  const before = readCpu();
  return () => {
    const after = readCpu();
    if (!before || !after) return undefined;
    const d = after.map((v, i) => v - before[i]);
    const total = d.reduce((s, v) => s + v, 0);
    return total > 0 ? d[7] / total : 0;
  };
}
