import { configDefaults, defineConfig, mergeConfig } from "vitest/config";
import base from "./vitest.config.js";

/**
 * `npm run test:fast`: the tests that need no devnet (anvil), Redis, HAProxy, Chromium or network
 * namespace, for the inner loop. Those are named `*.e2e.test.ts` (Chromium: `*.browser.test.ts`)
 * and left to `npm test`; test/build/test-sets.test.ts fails when another test file reaches them.
 */
export default mergeConfig(
  base,
  defineConfig({
    test: {
      exclude: [...configDefaults.exclude, "**/*.e2e.test.ts", "**/*.browser.test.ts"],
      // Most of these tests wait on sockets and child processes rather than compute, so more
      // forks than the default (one less than the cores) overlap those waits.
      maxWorkers: 4,
      minWorkers: 1,
    },
  }),
);
