// Once per e2e run, before any file: a local D1 with every migration applied, which each
// stack copies (test/e2e/stack.ts, MIGRATED_STATE_ENV) instead of applying the
// migrations again: `wrangler d1 migrations apply` is seconds of CPU, once per test file.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyLocalMigrations } from '../../src/tools/wrangler.ts';
import { MIGRATED_STATE_ENV } from './stack.ts';

export default async function setup(): Promise<() => Promise<void>> {
  const dir = await mkdtemp(join(tmpdir(), 'zk-migrated-'));
  await applyLocalMigrations(dir);
  // The test files' processes are started after this, with this process's environment.
  process.env[MIGRATED_STATE_ENV] = dir;
  return () => rm(dir, { recursive: true, force: true });
}
