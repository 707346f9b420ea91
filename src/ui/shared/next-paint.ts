// Waiting for the browser to paint: work that can come a frame later must not hold the first one.

/** Resolves once the browser has painted a frame (or after 100 ms where frames do not come, e.g. a hidden tab). */
export function afterNextPaint(): Promise<void> {
  return new Promise((resolve) => {
    requestAnimationFrame(() => void setTimeout(resolve, 0));
    setTimeout(resolve, 100);
  });
}
