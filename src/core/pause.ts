/** A private cell that nobody notifies: waiting on it with a timeout is a sub-millisecond timer. */
let cell: Int32Array | undefined;

type WaitAsync = (
  a: Int32Array,
  index: number,
  value: number,
  timeoutMs: number,
) => { readonly async: boolean; readonly value: unknown };

/** One wait of about `ms`: Atomics.waitAsync on the private cell, else setTimeout. */
function waitAbout(ms: number): Promise<unknown> {
  const waitAsync = (Atomics as unknown as { waitAsync?: WaitAsync }).waitAsync;
  if (!waitAsync || typeof SharedArrayBuffer === 'undefined') return new Promise((r) => setTimeout(r, ms));
  cell ??= new Int32Array(new SharedArrayBuffer(4));
  const w = waitAsync(cell, 0, 0, ms);
  return w.async ? (w.value as Promise<unknown>) : Promise.resolve();
}

/**
 * Resolves no sooner than `ms` milliseconds from now, without blocking the thread (0: at once, in
 * a microtask). `setTimeout` is clamped to ≥ 1 ms (4 ms once nested) in browsers; `Atomics.waitAsync`
 * with a timeout on a cell nobody notifies wakes at sub-millisecond resolution (0.1 ms asked, 0.2
 * ms measured in a rank worker here), though it may wake early (Node: 0.3 ms asked, 0.1 ms seen),
 * so it waits again for what is left. Where there is no `Atomics.waitAsync` or no
 * SharedArrayBuffer (a page not cross-origin isolated), `setTimeout`.
 */
export function pause(ms: number): Promise<void> {
  if (!(ms >= 0 && Number.isFinite(ms))) throw new Error(`pause: ${ms} ms is not a finite time ≥ 0.`);
  const end = performance.now() + ms;
  const rest = async (): Promise<void> => {
    for (let left = ms; left > 0; left = end - performance.now()) await waitAbout(left);
  };
  return rest();
}
