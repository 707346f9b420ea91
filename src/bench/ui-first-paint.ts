// Runs in the playground page from its first script on (scripts/bench/bench-ui.ts adds it as an init script): when the first timeline and the rank workers' oracle appear.

/** Times since navigation start (performance.now(), ms) at which the page first showed each thing. */
export interface FirstPaint {
  /** The first animation frame with a timeline lane drawn. */
  timelineMs?: number;
  /** The first frame where the oracle badge says pass or fail (the rank workers ran the layer). */
  oracleMs?: number;
}

/** The first element below `root` matching `selector`, looking into every open shadow root. */
function deepFirst(root: ParentNode, selector: string): Element | undefined {
  const hit = root.querySelector(selector);
  if (hit) return hit;
  for (const el of root.querySelectorAll('*')) {
    const inner = el.shadowRoot && deepFirst(el.shadowRoot, selector);
    if (inner) return inner;
  }
  return undefined;
}

/** Watches every animation frame until both times are known; the result is `window.__firstPaint`. */
export function watchFirstPaint(): FirstPaint {
  const seen: FirstPaint = {};
  const tick = (now: number): void => {
    if (seen.timelineMs === undefined) {
      const tl = deepFirst(document, 'tp-timeline');
      if (tl?.shadowRoot?.querySelector('g[data-lane]')) seen.timelineMs = now;
    }
    const badge = deepFirst(document, 'tp-oracle-badge');
    const pass = badge?.shadowRoot?.querySelector('.badge')?.getAttribute('data-pass');
    if (seen.oracleMs === undefined && (pass === 'true' || pass === 'false')) seen.oracleMs = now;
    if (seen.timelineMs === undefined || seen.oracleMs === undefined) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  return seen;
}
