import { commPrograms } from '../../../src/ranks/comm-programs.ts';
import { serveRank } from '../../../src/ranks/serve.ts';

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
  /** Rejects its call with an ordinary error. */
  fail: async (): Promise<never> => {
    throw new Error('injected failure');
  },
};

serveRank(faultPrograms);
