import { commPrograms } from '../../../src/ranks/comm-programs.ts';
import { serveRank } from '../../../src/ranks/serve.ts';
import type { RankContext } from '../../../src/ranks/context.ts';

/** The default programs plus injected faults. */
export const faultPrograms = {
  ...commPrograms,
  /** Returns at once: this rank never arrives at the collective its peers call. */
  skip: async (): Promise<string> => 'skipped',
  /** Throws an uncaught error from a task (the worker's 'error' event), then never returns. */
  crash: (): Promise<never> => {
    setTimeout(() => {
      throw new Error('injected crash');
    }, 0);
    return new Promise(() => {});
  },
  /** Terminates its own worker mid-call. */
  die: (): Promise<never> => {
    self.close();
    return new Promise(() => {});
  },
  /** Destroys its own GPUDevice mid-call, as a device loss would end it, then never returns. */
  loseDevice: (ctx: RankContext): Promise<never> => {
    ctx.device.destroy();
    return new Promise(() => {});
  },
  /** Never answers (a hung program). */
  hang: (): Promise<never> => new Promise(() => {}),
  /** This rank's adapter line and whether its device is usable (a fresh one after a loss). */
  deviceCheck: async (ctx: RankContext): Promise<string> => {
    const b = ctx.device.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    await b.mapAsync(GPUMapMode.READ);
    b.destroy();
    return 'usable';
  },
  /** Rejects its call with an ordinary error. */
  fail: async (): Promise<never> => {
    throw new Error('injected failure');
  },
};

serveRank(faultPrograms);
