import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
    // expect.poll's default of 1 s is too short for a browser on a loaded 2-core CI machine.
    expect: { poll: { timeout: 5_000 } },
  },
});
