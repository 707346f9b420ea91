// Waiting for the browser to paint: work that can come a frame later must not hold the first one.

/**
 * Resolves in the first task after the browser has painted a frame. A hidden tab paints no frames:
 * there it resolves after 100 ms. (A timer fallback in a visible tab would fire before a frame
 * whenever the task drawing it took longer than the timer, and let the work it guards hold that frame.)
 */
export function afterNextPaint(): Promise<void> {
  return new Promise((resolve) => {
    if (document.visibilityState === 'hidden') setTimeout(resolve, 100);
    else requestAnimationFrame(() => void setTimeout(resolve, 0));
  });
}
