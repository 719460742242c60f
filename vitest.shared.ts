// Shared vitest settings: integration tests run real servers, processes and S3 on a shared
// 2-core machine, so the defaults (5 s per test, 1 s per expect.poll) are too tight to be honest.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    expect: { poll: { timeout: 15_000 } },
  },
});
