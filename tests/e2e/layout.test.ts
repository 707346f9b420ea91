// The page lays out right: the main views at three viewports, audited in the page (scripts/page/layout-audit.ts).
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { OpenPage } from '../../scripts/device/browser-run.ts';
import type { LayoutFault } from '../../scripts/page/layout-audit.ts';
import {
  addLayoutAudit,
  layoutFaults,
  layoutViewports,
  mainPageViews,
  resize,
  showView,
} from '../../scripts/page/page-views.ts';
import { openE2ePage } from './built-page.ts';

let open: OpenPage;
let page: Page;

describe('the main views lay out right at 1280×800, 1920×1080 and 2560×1440 (built page)', () => {
  beforeAll(async () => {
    open = await openE2ePage('/', { viewport: layoutViewports[0] });
    page = open.page;
    await addLayoutAudit(page);
  }, 240_000);
  afterAll(async () => {
    await open?.close();
  });

  // No text spills out of its box, no SVG text (a legend, a tick, a title) leaves its SVG, and
  // sibling charts render their tick labels at one size (no chart scaled up to fill a row).
  for (const view of mainPageViews)
    test(`#view=${view}: no text overflows its box, no SVG text is clipped, sibling charts share one font size`, async () => {
      await showView(page, view);
      const faults: Record<string, LayoutFault[]> = {};
      const none: Record<string, LayoutFault[]> = {};
      for (const size of layoutViewports) {
        const at = `${size.width}×${size.height}`;
        await resize(page, size);
        await page.screenshot({ path: `test-results/layout-${view}-${size.width}x${size.height}.png`, fullPage: true });
        faults[at] = await layoutFaults(page);
        none[at] = [];
      }
      expect(faults).toEqual(none);
      expect(open.pageErrors).toEqual([]);
    }, 300_000);
});
