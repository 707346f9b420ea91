// Runs inside the served playground page (scripts/bench/bench-ui.ts evaluates it there): one TP change through the real control, timed to the redrawn timeline.

/** Elements below `root`, looking into every open shadow root. */
function deepAll(root: ParentNode, selector: string): Element[] {
  const out: Element[] = [...root.querySelectorAll(selector)];
  for (const el of root.querySelectorAll('*')) if (el.shadowRoot) out.push(...deepAll(el.shadowRoot, selector));
  return out;
}

/** The page's state as the bench sees it: shown degree, lanes drawn, busy. */
export function pageState(): { shownTp: number; lanes: number; busy: boolean } {
  const shown = deepAll(document, '[data-shown-tp]')[0]?.textContent ?? '';
  const timeline = deepAll(document, 'tp-timeline')[0];
  const lanes = timeline?.shadowRoot?.querySelectorAll('g[data-lane]').length ?? 0;
  const busy = deepAll(document, '[data-busy="true"]').length > 0;
  return { shownTp: Number(shown) || 0, lanes, busy };
}

/**
 * Sets the page's TP control (`select[data-control="tp"]`) to `tp` and resolves, at the first
 * animation frame where the page shows t = `tp` with 2·tp timeline lanes and is no longer busy,
 * with the ms since the change; rejects after `timeoutMs`.
 */
export async function changeTp(tp: number, timeoutMs: number): Promise<number> {
  const select = deepAll(document, 'select[data-control="tp"]')[0] as HTMLSelectElement | undefined;
  if (!select) throw new Error('bench:ui: the page has no select[data-control="tp"].');
  const t0 = performance.now();
  select.value = String(tp);
  select.dispatchEvent(new Event('change', { bubbles: true, composed: true }));
  for (;;) {
    const now = await new Promise<number>((r) => requestAnimationFrame(r));
    const s = pageState();
    if (s.shownTp === tp && s.lanes === 2 * tp && !s.busy) return now - t0;
    if (now - t0 > timeoutMs)
      throw new Error(
        `bench:ui: t = ${tp} was not drawn within ${timeoutMs / 1000} s (page shows t = ${s.shownTp}, ${s.lanes} lanes, busy ${s.busy}).`,
      );
  }
}
