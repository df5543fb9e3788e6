import { cloudflareTest, readD1Migrations } from '@cloudflare/vitest-plugin';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { localDevVars } from '../src/tools/dev-vars.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The committed test guest ELFs, base64 by file name, for tests running inside workerd (no filesystem there). */
function guestElfs(): Record<string, string> {
  const dir = fileURLToPath(new URL('./guests/build/', import.meta.url));
  if (!existsSync(dir)) return {};
  return Object.fromEntries(
    readdirSync(dir)
      .filter((f) => f.endsWith('.elf') || f.endsWith('.o'))
      .map((f) => [f, readFileSync(dir + f).toString('base64')]),
  );
}

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
                // The local-only settings wrangler dev reads from .dev.vars, given here whatever
                // a developer's own .dev.vars says.
                ...localDevVars(),
                TEST_MIGRATIONS: await readD1Migrations(fileURLToPath(new URL('../migrations', import.meta.url))),
                TEST_GUESTS: guestElfs(),
                // Log caps a test can reach (wrangler.toml's are sized for real jobs).
                LOG_MAX_CHUNKS: '64',
                LOG_MAX_BYTES: '262144',
                MAX_STREAMS_PER_ORG: '8',
                // Where the links the tests read point (test/worker/helpers.ts BASE).
                PUBLIC_ORIGIN: 'https://api.test',
              },
              // The real Rate Limiting binding, with limits small enough for a test to
              // reach (wrangler.toml's local ones are sized for benches and e2e runs).
              // Test files use their own API keys, so their counters never meet.
              ratelimits: {
                RATE_LIMIT_READS: { namespace_id: '1001', simple: { limit: 250, period: 60 } },
                RATE_LIMIT_SUBMISSIONS: { namespace_id: '1002', simple: { limit: 100, period: 60 } },
                RATE_LIMIT_UPLOADS: { namespace_id: '1003', simple: { limit: 30, period: 60 } },
                // An organization's budgets are above its keys' (one key alone meets its own first), and
                // above what test/worker/fuzz.test.ts sends in a minute over its rotating keys.
                RATE_LIMIT_ORG_READS: { namespace_id: '1004', simple: { limit: 2000, period: 60 } },
                RATE_LIMIT_ORG_SUBMISSIONS: { namespace_id: '1005', simple: { limit: 1000, period: 60 } },
                RATE_LIMIT_ORG_UPLOADS: { namespace_id: '1006', simple: { limit: 300, period: 60 } },
                RATE_LIMIT_CONSOLE: { namespace_id: '1007', simple: { limit: 600, period: 60 } },
                RATE_LIMIT_CONSOLE_ORG: { namespace_id: '1008', simple: { limit: 1000, period: 60 } },
                RATE_LIMIT_CONSOLE_SENDS: { namespace_id: '1009', simple: { limit: 20, period: 60 } },
                RATE_LIMIT_PASSWORD_RESET: { namespace_id: '1010', simple: { limit: 5, period: 60 } },
                // The doors' budgets (src/middleware/door.ts): above what the suite sends in a minute
                // from one credential or from no address at all (most tests send none), so a test
                // reaches one only from a fresh token or address of its own.
                RATE_LIMIT_AGENT: { namespace_id: '1011', simple: { limit: 300, period: 60 } },
                RATE_LIMIT_QUEUE: { namespace_id: '1012', simple: { limit: 300, period: 60 } },
                RATE_LIMIT_JOB: { namespace_id: '1013', simple: { limit: 300, period: 60 } },
                RATE_LIMIT_PUBLISHER: { namespace_id: '1014', simple: { limit: 300, period: 60 } },
                RATE_LIMIT_ANONYMOUS: { namespace_id: '1015', simple: { limit: 300, period: 60 } },
                RATE_LIMIT_OPEN: { namespace_id: '1016', simple: { limit: 500, period: 60 } },
                RATE_LIMIT_FAILED: { namespace_id: '1017', simple: { limit: 300, period: 60 } },
              },
            },
          })),
        ],
        test: {
          name: 'worker',
          root,
          include: ['test/worker/**/*.test.ts'],
          setupFiles: ['test/worker/setup.ts'],
          // One shared local D1/R2: files run one after another so their
          // before/after checks of storage see only their own writes.
          fileParallelism: false,
          // A test's timeout says it is stuck, never that it was slow: with the machine loaded
          // past 20 (npm test's other lane, two CPU burners, other work) the worker project ran
          // 3 to 12 times slower than alone; its longest test took 107 s. A test that sets its
          // own timeout is heavy work that took over a third of its old one on such a host.
          testTimeout: 300_000,
          hookTimeout: 300_000,
        },
      },
      {
        // Node side: the prover-agent and its engines.
        test: {
          name: 'node',
          root,
          environment: 'node',
          include: ['test/agent/**/*.test.ts', 'test/engine/**/*.test.ts', 'test/tools/**/*.test.ts'],
          // Stuck, never slow (as the worker project's): each `wrangler` process the tools'
          // tests start took tens of seconds on a loaded host, and applying every migration
          // in a hook past 120 s.
          testTimeout: 300_000,
          hookTimeout: 600_000,
        },
      },
      {
        // End to end: a Worker under wrangler dev and real prover-agent processes.
        // One stack at a time: each is a workerd plus agents on a 2-core machine.
        test: {
          name: 'e2e',
          root,
          environment: 'node',
          include: ['test/e2e/**/*.test.ts'],
          // One migrated local D1 that every file's stack copies (test/e2e/stack.ts).
          globalSetup: ['test/e2e/global-setup.ts'],
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // expect.poll waits for a state the stack reaches (a list reloaded after a POST, a
          // mail in the outbox), not for a deadline: vitest's default of 1 s made each poll a
          // timing assertion that a loaded machine fails (a POST and a reload, or one page
          // load inside mailedLink, past 1 s). Like the suites' other waits, it gives up late.
          expect: { poll: { timeout: 30_000 } },
        },
      },
    ],
  },
});
