// Types of the test Worker's env and main module, as seen through cloudflare:test
// and cloudflare:workers.
type WorkerEnv = import('../../src/env.ts').Env;
type D1MigrationList = import('cloudflare:test').D1Migration[];
type WorkerMainModule = typeof import('../../src/index.ts');

declare namespace Cloudflare {
  interface Env extends WorkerEnv {
    TEST_MIGRATIONS: D1MigrationList;
    /** Base64 of test/guests/build/* by file name. */
    TEST_GUESTS: Record<string, string>;
  }
  interface GlobalProps {
    mainModule: WorkerMainModule;
  }
}
