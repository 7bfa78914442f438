import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // Separate processes: NODE_EXTRA_CA_CERTS (the test CA) is only read at process start, and the
    // forks inherit what globalSetup puts in process.env.
    pool: "forks",
    globalSetup: ["test/fixtures/global-setup.ts"],
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
