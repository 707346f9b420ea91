/** Resolves once `cond()` holds, checking every `everyMs`; fails with `what` after `ms`. */
export async function until(cond: () => boolean, ms: number, what: string, everyMs = 50): Promise<void> {
  const t0 = performance.now();
  while (!cond()) {
    if (performance.now() - t0 > ms) throw new Error(`${what}: not met within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
