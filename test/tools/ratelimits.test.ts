// The rate budgets every route's door counts (src/middleware/door-kinds.ts RATE_BUDGETS,
// src/middleware/rate-limit.ts) are [[ratelimits]] bindings: every environment of
// wrangler.toml declares each of them (they are not inherited), with its own counters,
// a 60-second period (Retry-After says 60), and deployed limits that let the fleet work:
// an idle agent pulls its queue once a second, a running job checks its status once a
// second and sends logs twice a second.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../src/tools/wrangler.ts';

interface Limit {
  name: string;
  namespace: string;
  limit: number;
  period: number;
}

/** The [[ratelimits]] of each environment ('' for the top level), read from wrangler.toml. */
function ratelimits(): Map<string, Limit[]> {
  const toml = readFileSync(path.join(ROOT, 'wrangler.toml'), 'utf8');
  const byEnv = new Map<string, Limit[]>();
  const block =
    /^\[\[(?:env\.(\w+)\.)?ratelimits\]\]\nname = "(\w+)"\nnamespace_id = "(\d+)"\nsimple = \{ limit = (\d+), period = (\d+) \}$/gm;
  for (const m of toml.matchAll(block)) {
    const list = byEnv.get(m[1] ?? '') ?? [];
    list.push({ name: m[2], namespace: m[3], limit: Number(m[4]), period: Number(m[5]) });
    byEnv.set(m[1] ?? '', list);
  }
  return byEnv;
}

/** The RATE_LIMIT_* bindings the Worker's Env declares. */
const bindings = () =>
  [...readFileSync(path.join(ROOT, 'src/env.ts'), 'utf8').matchAll(/^\s+(RATE_LIMIT_\w+): RateLimit;$/gm)].map((m) => m[1]).sort();

describe('wrangler.toml [[ratelimits]]', () => {
  const envs = ratelimits();

  it('declares every binding of the Env in every environment, each with its own counters and a 60 s period', () => {
    expect([...envs.keys()].sort()).toEqual(['', 'production', 'staging']);
    expect(bindings().length).toBeGreaterThanOrEqual(17);
    const namespaces = new Set<string>();
    for (const [name, limits] of envs) {
      expect(limits.map((l) => l.name).sort(), name || 'local').toEqual(bindings());
      for (const l of limits) {
        expect(l.period, `${name} ${l.name}`).toBe(60);
        expect(namespaces.has(l.namespace), `${name} ${l.name}: namespace ${l.namespace} used twice`).toBe(false);
        namespaces.add(l.namespace);
      }
    }
  });

  it('lets an idle agent pull once a second and a running job report as it does, in every deployed environment', () => {
    for (const name of ['staging', 'production']) {
      const limit = (binding: string) => envs.get(name)!.find((l) => l.name === binding)!.limit;
      // Pulls once a second, and an ack after each pull that brought notices.
      expect(limit('RATE_LIMIT_QUEUE'), name).toBeGreaterThanOrEqual(2 * 60);
      // A status check a second, two log chunks a second, a heartbeat every 5 s, the rest a few.
      expect(limit('RATE_LIMIT_JOB'), name).toBeGreaterThanOrEqual(60 + 120 + 12 + 20);
      // Presence once a minute; a claim per job of a busy host (or group of hosts sharing a token).
      expect(limit('RATE_LIMIT_AGENT'), name).toBeGreaterThanOrEqual(1000);
    }
  });
});
