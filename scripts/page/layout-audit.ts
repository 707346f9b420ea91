// Runs inside the served page (tests/e2e/layout.test.ts and scripts/page/screenshots.ts add it as a script): what does not lay out right.

/** One layout fault, with where it is and what was measured (CSS pixels). */
export interface LayoutFault {
  readonly rule: 'text-overflow' | 'svg-text-outside' | 'chart-font-size' | 'control-outside';
  /** A path of tags (with data-chart / class) from the page down to the element. */
  readonly where: string;
  readonly detail: string;
}

/** Elements below `root`, looking into every open shadow root. */
function deepAll(root: ParentNode, selector: string): Element[] {
  const out: Element[] = [...root.querySelectorAll(selector)];
  for (const el of root.querySelectorAll('*')) if (el.shadowRoot) out.push(...deepAll(el.shadowRoot, selector));
  return out;
}

/** `tag[data-chart].class` of `el` and its ancestors across shadow roots, outermost first, at most 5. */
function pathOf(el: Element): string {
  const parts: string[] = [];
  for (let e: Element | null = el; e && parts.length < 5; ) {
    const chart = e.getAttribute('data-chart');
    const cls = typeof e.className === 'string' && e.className ? `.${e.className.trim().split(/\s+/).join('.')}` : '';
    parts.unshift(`${e.tagName.toLowerCase()}${chart ? `[data-chart=${chart}]` : ''}${cls}`);
    e = e.parentElement ?? ((e.getRootNode() as ShadowRoot).host || null);
  }
  return parts.join(' > ');
}

/** Shown at all (not display:none, not in a closed <details>, with a box). */
function shown(el: Element): boolean {
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && el.checkVisibility();
}

/** The element's own text (its direct text nodes), trimmed. */
const ownText = (el: Element): string =>
  [...el.childNodes]
    .filter((n) => n.nodeType === Node.TEXT_NODE)
    .map((n) => n.textContent ?? '')
    .join('')
    .trim();

/** Slack for sub-pixel rounding of boxes, px. */
const slack = 1;

/**
 * Text that spills out of its box: an HTML element with text of its own whose content is wider
 * than its box (scrollWidth > clientWidth) while its overflow is not a scroll area (auto/scroll
 * says the page chose to scroll there).
 */
function textOverflow(): LayoutFault[] {
  const out: LayoutFault[] = [];
  for (const el of deepAll(document, 'body *')) {
    if (el instanceof SVGElement || !(el instanceof HTMLElement) || !ownText(el) || !shown(el)) continue;
    const cs = getComputedStyle(el);
    if (cs.display === 'inline' || /auto|scroll/.test(cs.overflowX)) continue;
    if (el.scrollWidth > el.clientWidth + slack)
      out.push({
        rule: 'text-overflow',
        where: pathOf(el),
        detail: `"${ownText(el).slice(0, 60)}": content ${el.scrollWidth} px wide in a ${el.clientWidth} px box`,
      });
  }
  return out;
}

/**
 * SVG text whose rendered box leaves its SVG (an <svg> clips what lies outside it: a legend cut
 * off) or, for a chart, the chart's box.
 */
function svgTextOutside(): LayoutFault[] {
  const out: LayoutFault[] = [];
  for (const svg of deepAll(document, 'svg')) {
    if (!shown(svg) || svg.parentElement?.closest('svg')) continue;
    const box = svg.getBoundingClientRect();
    for (const t of svg.querySelectorAll('text')) {
      if (!t.textContent?.trim() || !shown(t)) continue;
      const r = t.getBoundingClientRect();
      const over = {
        left: box.left - r.left,
        right: r.right - box.right,
        top: box.top - r.top,
        bottom: r.bottom - box.bottom,
      };
      const worst = Object.entries(over).filter(([, d]) => d > slack);
      if (worst.length)
        out.push({
          rule: 'svg-text-outside',
          where: pathOf(t),
          detail: `"${t.textContent.trim().slice(0, 60)}" leaves its svg by ${worst.map(([s, d]) => `${d.toFixed(0)} px ${s}`).join(', ')}`,
        });
    }
  }
  return out;
}

/**
 * A form control or fieldset whose box leaves its panel: the nearest enclosing fieldset (for a
 * control) or the element's shadow host (for a fieldset) ends before it does. A fieldset sizes to
 * its min-content by default, so one wide input widens a sidebar past its grid column.
 */
function controlOutside(): LayoutFault[] {
  const out: LayoutFault[] = [];
  for (const el of deepAll(document, 'fieldset, input, select, textarea')) {
    if (!shown(el)) continue;
    const panel =
      el.tagName === 'FIELDSET'
        ? ((el.getRootNode() as ShadowRoot).host ?? null)
        : el.parentElement?.closest('fieldset');
    if (!panel || !shown(panel)) continue;
    const r = el.getBoundingClientRect();
    const box = panel.getBoundingClientRect();
    const right = r.right - box.right;
    if (right > slack)
      out.push({
        rule: 'control-outside',
        where: pathOf(el),
        detail: `ends ${right.toFixed(0)} px right of its ${panel.tagName.toLowerCase()} (${box.width.toFixed(0)} px wide)`,
      });
  }
  return out;
}

/** Median of a non-empty list. */
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

/** Largest over smallest rendered tick-label font size allowed between sibling charts (5%: rounding of scales). */
export const fontRatioLimit = 1.05;

/**
 * The font size a reader sees for SVG text `t`, in CSS px: its computed font size times the scale
 * its SVG's viewBox and transforms give it (the screen CTM's x scale). Unlike the text's bounding
 * box, it does not change with the glyphs a label holds (a fallback font for "×" or "·" has other
 * ascents), only with the font and the scaling.
 */
function renderedFontPx(t: SVGTextElement): number {
  const m = t.getScreenCTM();
  const scale = m ? Math.hypot(m.a, m.b) : 1;
  return Number.parseFloat(getComputedStyle(t).fontSize) * scale;
}

/**
 * Sibling charts (the svgs with tick labels under one parent) whose tick labels render at
 * different sizes: the median rendered font size of each chart's `.tick text` (the font size times
 * the SVG's scale, as a reader sees it) against its siblings'.
 */
function chartFontSize(): LayoutFault[] {
  const out: LayoutFault[] = [];
  const groups = new Map<Element, { svg: Element; h: number }[]>();
  for (const svg of deepAll(document, 'svg')) {
    if (!shown(svg) || !svg.parentElement) continue;
    const ticks = [...svg.querySelectorAll<SVGTextElement>('.tick text')].filter(shown).map(renderedFontPx);
    if (!ticks.length) continue;
    const g = groups.get(svg.parentElement) ?? [];
    g.push({ svg, h: median(ticks) });
    groups.set(svg.parentElement, g);
  }
  for (const charts of groups.values()) {
    if (charts.length < 2) continue;
    const lo = Math.min(...charts.map((c) => c.h));
    for (const c of charts)
      if (c.h / lo > fontRatioLimit)
        out.push({
          rule: 'chart-font-size',
          where: pathOf(c.svg),
          detail: `tick labels render at ${c.h.toFixed(1)} px against ${lo.toFixed(1)} px in a sibling chart (×${(c.h / lo).toFixed(2)})`,
        });
  }
  return out;
}

/** Every layout fault on the page as it is drawn now. */
export function layoutFaults(): LayoutFault[] {
  return [...textOverflow(), ...svgTextOutside(), ...chartFontSize(), ...controlOutside()];
}
