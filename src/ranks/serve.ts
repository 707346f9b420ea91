import * as Comlink from 'comlink';
import { GpuCollectives } from '../comm/gpu-collectives.ts';
import { PortRingCollectives } from '../comm/port-ring.ts';
import { SabRingCollectives } from '../comm/sab-ring.ts';
import { adapterName, requestKernelDevice } from '../kernels/adapter.ts';
import { disposeStagingPool } from '../kernels/staging-pool.ts';
import type { TraceEvent } from '../core/trace-event.ts';
import { TraceRecorder } from '../core/trace-recorder.ts';
import type { BaseCollectives } from '../comm/base.ts';
import { createInProcessGroup } from '../comm/in-process.ts';
import { rankMesh, type GroupKind } from '../mesh/rank-layout.ts';
import type {
  GroupComm,
  RankContext,
  RankGroupInit,
  RankInfo,
  RankInit,
  RankProgram,
  RankPrograms,
} from './context.ts';

/** Typed arrays (on non-shared buffers) in a result, to transfer instead of copy. */
function transferables(v: unknown, depth = 0, out = new Set<ArrayBuffer>()): ArrayBuffer[] {
  if (ArrayBuffer.isView(v) && v.buffer instanceof ArrayBuffer) out.add(v.buffer);
  else if (v && typeof v === 'object' && depth < 3) Object.values(v).forEach((w) => transferables(w, depth + 1, out));
  return [...out];
}

/** The one object a rank worker exposes (via serveRank): set up, run programs, drain trace, dispose. */
export class RankWorker {
  private ctx: RankContext | undefined;
  /** The MessagePort communicators of this rank's groups (closed and aborted here; rings are aborted through their memory). */
  private ports: PortRingCollectives[] = [];
  private own: { device: GPUDevice; adapter: string } | undefined;
  /** Set when this rank's device was lost other than by dispose: which adapter, and why. */
  private lost: string | undefined;
  private rank = -1;

  /** `gpu`: the WebGPU entry point the rank's device comes from (default the worker's navigator.gpu; Dawn's in Node). */
  constructor(
    private readonly programs: RankPrograms,
    private readonly gpu?: GPU,
  ) {}

  /**
   * Joins the group `cfg` describes. The first call requests this worker's own adapter and
   * GPUDevice; a later call (the pool re-formed with another degree) keeps them, and with them the
   * pipelines compiled on the device, and only rewires the collectives.
   */
  async init(cfg: RankInit): Promise<RankInfo> {
    this.rank = cfg.rank;
    if (!this.own) {
      // A new device, also after a lost one: the rank is rebuilt when the pool is next formed.
      const { adapter, device } = await requestKernelDevice(`rank ${cfg.rank}`, this.gpu);
      const own = { device, adapter: adapterName(adapter) };
      this.own = own;
      this.lost = undefined;
      void device.lost.then((info) => {
        if (this.own !== own) return; // disposed (destroyed on purpose) or already replaced
        this.own = undefined;
        this.ctx = undefined;
        this.lost = `its GPU device (${own.adapter}) was lost: ${info.reason}${info.message ? ` — ${info.message}` : ''}. The next run requests a new device.`;
        // Reported at once, in or between calls: an uncaught error reaches the pool as this worker's error event.
        const report = `rank ${this.rank}: ${this.lost}`;
        setTimeout(() => {
          throw new Error(report);
        }, 0);
      });
    }
    const { device, adapter } = this.own;
    this.ports.forEach((p) => p.close());
    this.ports = [];
    const trace = new TraceRecorder();
    const groups = new Map<GroupKind, GroupComm>();
    for (const g of cfg.groups) {
      const comm = this.join(g, trace, cfg.timeoutMs);
      groups.set(g.kind, { ...(g.view && { view: g.view }), comm, gpuComm: new GpuCollectives(device, comm) });
    }
    const tp = groups.get('tp');
    if (!tp) throw new Error(`rank ${cfg.rank}: init without a TP group (groups: ${[...groups.keys()].join(', ')}).`);
    const layout = rankMesh(cfg.mesh.degrees, cfg.mesh.order);
    const mesh = {
      spec: cfg.mesh,
      rank: cfg.rank,
      coords: layout.coords(cfg.rank),
      group: (kind: GroupKind): GroupComm => {
        const g = groups.get(kind);
        if (!g)
          throw new Error(
            `rank ${cfg.rank}: the pool did not wire a ${kind} group (it wired ${[...groups.keys()].join(', ')}); create it with that kind in its mesh groups.`,
          );
        return g;
      },
    };
    const comm = tp.comm as BaseCollectives;
    this.ctx = {
      rank: comm.rank,
      size: comm.size,
      mesh,
      transport: comm.transport,
      device,
      comm,
      gpuComm: tp.gpuComm,
      trace,
      link: comm,
    };
    return { rank: cfg.rank, adapter, transport: comm.transport };
  }

  /** This rank's communicator in one group: over the group's ring or ports, or alone. */
  private join(g: RankGroupInit, trace: TraceRecorder, timeoutMs: number): BaseCollectives {
    const t = g.transport;
    if (t.kind === 'solo') return createInProcessGroup(1, { timeoutMs, sinks: [trace], group: g.view })[0]!;
    if (t.kind === 'sab-ring') return new SabRingCollectives(g.rank, g.size, t.ring, trace, timeoutMs, g.view);
    const ports = new PortRingCollectives(g.rank, g.size, t.ports, trace, timeoutMs, g.view);
    this.ports.push(ports);
    return ports;
  }

  /** Runs program `name` on this rank; typed arrays in the result are transferred. */
  async run(name: string, args: unknown): Promise<unknown> {
    if (this.lost) throw new Error(`rank ${this.rank}: ${this.lost}`);
    const ctx = this.ctx;
    if (!ctx) throw new Error(`rank worker: run("${name}") before init.`);
    const program = this.programs[name] as RankProgram<unknown, unknown> | undefined;
    if (!program)
      throw new Error(
        `rank ${ctx.rank}: no program "${name}" (this worker serves: ${Object.keys(this.programs).join(', ')}).`,
      );
    let result: unknown;
    try {
      result = await program(ctx, args);
    } catch (e) {
      // A lost device fails the program first; give its lost callback the chance to say so.
      await Promise.race([ctx.device.lost, new Promise((r) => setTimeout(r, 100))]);
      if (this.lost) throw new Error(`rank ${ctx.rank}: ${this.lost}`, { cause: e });
      throw e;
    }
    const moved = transferables(result);
    return moved.length ? Comlink.transfer(result, moved) : result;
  }

  /** Returns and forgets this rank's trace events. */
  drainTrace(): TraceEvent[] {
    return this.ctx?.trace.drain() ?? [];
  }

  /**
   * Holds the Web Lock `name` until this worker ends; resolves once it is held. The pool waits for
   * the same lock, which the browser grants the moment this worker closes or dies.
   */
  holdLifeLock(name: string): Promise<void> {
    return new Promise((held, failed) => {
      navigator.locks
        .request(name, () => {
          held();
          return new Promise<never>(() => {});
        })
        .catch(failed);
    });
  }

  /** Fails pending MessagePort receives (shared-memory ranks are aborted through the ring). */
  abort(reason: string): void {
    this.ports.forEach((p) => p.abort(reason));
  }

  /** Destroys the device and closes the ports; resolves with the device-lost reason. */
  async dispose(): Promise<string> {
    this.ports.forEach((p) => p.close());
    const device = this.own?.device;
    this.ctx = undefined;
    this.own = undefined;
    if (!device) return 'no device';
    await disposeStagingPool(device);
    device.destroy();
    return (await device.lost).reason;
  }
}

/**
 * Worker entry: exposes a RankWorker serving `programs` (the project's only Comlink.expose), on
 * the worker's own scope by default; in Node, on `endpoint` (the thread's parentPort) with Dawn's `gpu`.
 */
export function serveRank(
  programs: RankPrograms,
  node?: { readonly gpu: GPU; readonly endpoint: Comlink.Endpoint },
): void {
  Comlink.expose(new RankWorker(programs, node?.gpu), node?.endpoint);
}
