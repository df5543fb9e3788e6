import { cloudflareTest, readD1Migrations } from '@cloudflare/vitest-plugin';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const root = fileURLToPath(new URL('..', import.meta.url));

export default defineConfig({
  root,
  test: {
    projects: [
      {
        // The Worker, in workerd with its real local D1, R2 and Queues.
        plugins: [
          cloudflareTest(async () => ({
            wrangler: { configPath: './wrangler.toml' },
            miniflare: {
              bindings: {
                TEST_MIGRATIONS: await readD1Migrations(fileURLToPath(new URL('../migrations', import.meta.url))),
              },
            },
          })),
        ],
        test: {
          name: 'worker',
          root,
          include: ['test/worker/**/*.test.ts'],
          setupFiles: ['test/worker/setup.ts'],
        },
      },
      {
        // Node side: the prover-agent, its engines, and end-to-end runs of the
        // agent against a Worker started under wrangler dev.
        test: {
          name: 'node',
          root,
          environment: 'node',
          include: ['test/agent/**/*.test.ts', 'test/engine/**/*.test.ts', 'test/e2e/**/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
