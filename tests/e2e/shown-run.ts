// Waiting for the page to show a finished run of given settings (tp-app mirrors the last finished run's hash as data-shown).
import type { Page } from 'playwright';

/** Waits until `page` shows a finished run whose hash has every `key=value` of `parts`. */
export async function waitShownRun(page: Page, timeout: number, ...parts: string[]): Promise<void> {
  await page.waitForFunction(
    (want) => {
      const app = document.querySelector('tp-app');
      const shown = `${app?.dataset.shown ?? ''}&`;
      return app?.dataset.busy === 'false' && want.every((w) => shown.includes(`${w}&`));
    },
    parts,
    { timeout },
  );
}
