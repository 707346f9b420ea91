// Runs in the bench page (scripts/bench/bench-p2p.ts imports it through scripts/device/browser-run.ts).
import { median } from '../../src/core/stats.ts';
import type { PoolTransport } from '../../src/ranks/transport.ts';
import { createCommPool } from '../../src/session/pools.ts';

/** One measured configuration: a message's time (half a ping-pong round trip), ms. */
export interface P2PBenchRow {
  readonly transport: PoolTransport;
  readonly device: 'cpu' | 'gpu';
  readonly bytes: number;
  readonly medianMs: number;
  readonly minMs: number;
  readonly maxMs: number;
  /** bytes / median time. */
  readonly gbPerS: number;
}

/** What `npm run bench:p2p` prints. */
export interface P2PBenchReport {
  readonly adapter: string;
  readonly hardwareConcurrency: number;
  readonly rows: P2PBenchRow[];
}

/** Ping-pong between two rank workers (src/ranks/comm-programs.ts benchP2P) for each transport, device and size. */
export async function runP2PBench(args: {
  readonly sizes: readonly number[];
  readonly transports: readonly PoolTransport[];
  readonly iters: number;
  readonly onProgress?: (line: string) => void;
}): Promise<P2PBenchReport> {
  const rows: P2PBenchRow[] = [];
  let adapter = '';
  for (const transport of args.transports) {
    const pool = await createCommPool(2, transport, 60_000, Math.max(...args.sizes));
    adapter = pool.adapters[0] ?? adapter;
    try {
      for (const device of ['cpu', 'gpu'] as const)
        for (const bytes of args.sizes) {
          args.onProgress?.(`${transport} ${device} ${bytes} B…`);
          const [times] = await pool.run('benchP2P', { device, elems: bytes / 4, iters: args.iters, warmup: 3 });
          const ms = median(times!);
          rows.push({
            transport,
            device,
            bytes,
            medianMs: ms,
            minMs: Math.min(...times!),
            maxMs: Math.max(...times!),
            gbPerS: bytes / (ms * 1e6),
          });
        }
    } finally {
      await pool.dispose();
    }
  }
  return { adapter, hardwareConcurrency: navigator.hardwareConcurrency, rows };
}
