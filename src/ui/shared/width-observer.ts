// Redrawing a chart when its element's content width changes by more than a couple of pixels.

/** Observes `el`; calls `onWidth(w)` whenever its content width moves more than 2 px from `current()`. */
export function observeWidth(el: Element, current: () => number, onWidth: (w: number) => void): ResizeObserver {
  const observer = new ResizeObserver((entries) => {
    const w = Math.round(entries[0]?.contentRect.width ?? 0);
    if (w > 0 && Math.abs(w - current()) > 2) onWidth(w);
  });
  observer.observe(el);
  return observer;
}
