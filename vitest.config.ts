import { availableParallelism } from 'node:os';
import { defineConfig, mergeConfig } from 'vitest/config';
import { playwright } from '@vitest/browser-playwright';
import viteConfig from './vite.config.ts';
import { chromiumArgs, chromiumPath } from './scripts/device/chromium.ts';

/**
 * Three projects: `unit` runs pure TS in Node (plan, trace, CPU twins); `e2e` drives the served
 * page in headless Chromium from Node (Playwright); `gpu` runs real WGSL on the real WebGPU
 * adapter of headless Chromium (SwiftShader on CI machines).
 *
 * Two groups, one after the other (`sequence.groupOrder`): first `unit` on every core (its files are
 * single-threaded Node), then `e2e` beside `gpu`, each on cores − 1 workers (vitest's default), whose
 * files each drive a multi-process Chromium with rank workers. In one group the Node pool ran unit
 * and e2e files on cores − 1 workers, longest first, so its unit files came last, one at a time, after
 * the GPU files had ended: on two cores one core idled for that tail.
 */
export default mergeConfig(
  viteConfig,
  defineConfig({
    test: {
      projects: [
        {
          extends: true,
          test: {
            name: 'unit',
            environment: 'node',
            include: ['tests/unit/**/*.test.ts'],
            maxWorkers: availableParallelism(),
            sequence: { groupOrder: 0 },
            // A hang guard, not a speed check: with a file on every core, a test taking 0.7 s alone
            // (the Adam twin's) hit vitest's 5 s default under load; a real hang still fails at 60 s.
            testTimeout: 60_000,
          },
        },
        {
          extends: true,
          test: {
            name: 'e2e',
            environment: 'node',
            include: ['tests/e2e/**/*.test.ts'],
            globalSetup: ['tests/e2e/build-once.ts'],
            sequence: { groupOrder: 1 },
            // A poll waits on the page, which on two busy cores can take seconds to re-project or
            // redraw (the 1 s default failed a clean-clone run); a real failure still fails at 30 s.
            expect: { poll: { timeout: 30_000 } },
            testTimeout: 180_000,
            hookTimeout: 180_000,
          },
        },
        {
          extends: true,
          test: {
            name: 'gpu',
            include: ['tests/gpu/**/*.test.ts'],
            sequence: { groupOrder: 1 },
            testTimeout: 120_000,
            hookTimeout: 120_000,
            browser: {
              enabled: true,
              headless: true,
              screenshotFailures: false,
              provider: playwright({
                launchOptions: { executablePath: chromiumPath(), args: chromiumArgs },
              }),
              instances: [{ browser: 'chromium' }],
            },
          },
        },
      ],
    },
  }),
);
