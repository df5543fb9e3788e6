// `npm run bench:account-timing [-- --samples 150]`: whether the time of an answer
// tells if an email has an account. Against a local Worker (wrangler dev, its own state
// directory and port), POST /console/v1/auth/password-reset and POST
// /console/v1/auth/signin (a wrong password) are sent for existing accounts and for
// unknown emails, in a random order, one at a time, and the time of each answer is
// measured at the client; prints p50, p95 and mean per population, and a rank-sum z of
// the two (beyond ±2: one population tells itself apart). SECURITY.md
// "Console accounts, links and email" promises the two populations cannot be told apart.
//
// Each existing account is asked for a reset once (the third and later links of an
// email in 15 minutes are silently not made, which would measure the refusal instead)
// Passwords are hashed as deployed (PASSWORD_ITERATIONS), as sign-in reads them.
// Every request names its own client address (cf-connecting-ip), so no per-client limit
// is reached.
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createOrganization, createUser } from '../../src/admin/statements.ts';
import { hashPassword } from '../../src/features/accounts/password.ts';
import { applyLocalMigrations, d1Execute, freePort, spawnWranglerDev, stopGroup, waitForHealthy } from '../../src/tools/wrangler.ts';
import { benchCli } from './cli.ts';

const usage = `usage: npm run bench:account-timing -- [--samples N]
  --samples N   answers measured per population and route (default 150)`;

const cli = benchCli('bench:account-timing', usage, ['samples']);
const samples = cli.number('samples', 150, 10);
const WARM_UP = 20;

const log = (msg: string) => process.stderr.write(`bench:account-timing: ${msg}\n`);

type Population = 'existing' | 'unknown';

function summary(times: number[]) {
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { p50: at(0.5), p95: at(0.95), mean: times.reduce((a, b) => a + b, 0) / times.length };
}

/**
 * The Mann-Whitney rank-sum z of two samples (normal approximation, ties ranked at their
 * mean): near 0 when neither population answers faster; beyond ±2, one tells itself apart
 * (at about the 5 % level).
 */
function rankSumZ(a: number[], b: number[]): number {
  const all = [...a.map((v) => ({ v, a: true })), ...b.map((v) => ({ v, a: false }))].sort((x, y) => x.v - y.v);
  let rankA = 0;
  for (let i = 0; i < all.length;) {
    let j = i;
    while (j < all.length && all[j].v === all[i].v) j++;
    const mean = (i + 1 + j) / 2;
    for (let k = i; k < j; k++) if (all[k].a) rankA += mean;
    i = j;
  }
  const [n1, n2] = [a.length, b.length];
  const u = rankA - (n1 * (n1 + 1)) / 2;
  return (u - (n1 * n2) / 2) / Math.sqrt((n1 * n2 * (n1 + n2 + 1)) / 12);
}

/** The populations in a random order, `n` of each. */
function shuffled(n: number): Population[] {
  const order: Population[] = [...Array<Population>(n).fill('existing'), ...Array<Population>(n).fill('unknown')];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}

async function main() {
  const dir = await mkdtemp(path.join(tmpdir(), 'zk-bench-account-timing-'));
  let worker: ChildProcess | undefined;
  const cleanup = async () => {
    if (worker) await stopGroup(worker);
    await rm(dir, { recursive: true, force: true });
  };
  const onSignal = () => void cleanup().then(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const persistTo = path.join(dir, 'state');
    await applyLocalMigrations(persistTo);
    const accounts = samples * 2 + WARM_UP;
    log(`seeding ${accounts} accounts (passwords hashed as deployed, ${accounts} hashes)`);
    const org = createOrganization('bench');
    const orgId = org.output.at(-1)!;
    const hash = await hashPassword('the right password');
    const emails = Array.from({ length: accounts }, (_, i) => `person${i}@bench.example`);
    const users = await Promise.all(
      emails.map((email) => createUser({ email, orgId, role: 'member', consoleUrl: 'x', passwordHash: hash })),
    );
    const target = { remote: false, persistTo };
    await d1Execute(target, org.sql);
    // In slices: the statements travel on wrangler's command line.
    for (let i = 0; i < users.length; i += 40)
      await d1Execute(
        target,
        users.slice(i, i + 40).flatMap((u) => u.sql),
      );

    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    worker = await spawnWranglerDev({ port, persistTo, extraArgs: ['--log-level', 'warn'] });
    await waitForHealthy(`${base}/healthz`, worker);

    let client = 0;
    const post = async (route: string, body: unknown, expected: number) => {
      const started = performance.now();
      const res = await fetch(`${base}/console/v1/auth/${route}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-console-csrf': '1',
          origin: base,
          'cf-connecting-ip': `198.18.${(++client >> 8) & 255}.${client & 255}`,
        },
        body: JSON.stringify(body),
      });
      await res.arrayBuffer();
      const took = performance.now() - started;
      if (res.status !== expected) throw new Error(`${route}: expected ${expected}, got ${res.status}`);
      return took;
    };
    let unknown = 0;
    const nextExisting = (() => {
      let i = 0;
      return () => emails[i++];
    })();
    const routes = {
      'password-reset': (who: Population) =>
        post('password-reset', { email: who === 'existing' ? nextExisting() : `nobody${++unknown}@bench.example` }, 202),
      signin: (who: Population) =>
        post(
          'signin',
          {
            email: who === 'existing' ? emails[Math.floor(Math.random() * emails.length)] : `nobody${++unknown}@bench.example`,
            password: 'a wrong password',
          },
          401,
        ),
    };

    console.log(`answer time at the client, ms: ${samples} existing and ${samples} unknown emails per route, in a random order`);
    console.log(`${'route'.padEnd(16)} ${'population'.padEnd(10)} ${'p50'.padStart(7)} ${'p95'.padStart(7)} ${'mean'.padStart(7)}`);
    for (const [route, send] of Object.entries(routes)) {
      for (let i = 0; i < WARM_UP / 2; i++) await send(i % 2 ? 'existing' : 'unknown');
      const times: Record<Population, number[]> = { existing: [], unknown: [] };
      for (const who of shuffled(samples)) times[who].push(await send(who));
      for (const who of ['existing', 'unknown'] as const) {
        const m = summary(times[who]);
        const z = who === 'unknown' ? `  rank-sum z ${rankSumZ(times.existing, times.unknown).toFixed(2)}` : '';
        console.log(
          `${route.padEnd(16)} ${who.padEnd(10)} ${m.p50.toFixed(1).padStart(7)} ${m.p95.toFixed(1).padStart(7)} ${m.mean.toFixed(1).padStart(7)}${z}`,
        );
      }
    }
  } finally {
    await cleanup();
  }
}

main().catch((err: unknown) => {
  console.error(`bench:account-timing: ${(err as Error).stack ?? String(err)}`);
  process.exit(1);
});
