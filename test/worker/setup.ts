import { applyD1Migrations, env } from 'cloudflare:test';

// Migrations are applied once per test run; setup files run before each test
// file, and applyD1Migrations() skips what is already applied.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
