// npm run bench:scheduler [-- --sizes 1000,100000,1000000 --orgs 10,10000 --claims 200 --budget 10]
//
// What a claim, a submission's quota check and a cron sweep cost as the queue grows,
// today (the baseline commit, before queue lanes and counters) and now, side by side
// in one run. Each runs the project's own statements (the trees' own src/jobs modules,
// built by drizzle) against SQLite on the project's own schema (each tree's
// migrations), in this process through a small D1-shaped adapter over node:sqlite:
// what D1 itself runs, minus the network. N queued jobs spread over K organizations
// are loaded before the last migration, as an upgrade would find them.
//   claim:   the claim function (baseline: its conditional UPDATE batch; now: the whole
//            claim batch: agent token, lease, subject, and what the agent is handed)
//   submit:  the quota check of one more job (baseline: the pre-check and the job
//            insert's conditional, both counting the organization's jobs; now: the
//            usage read and the insert, both reading counters)
//   sweep:   one cron sweep (expired leases, stale notices, with one live agent)
//   wait:    (now only) reading a queued record's waiting reason: the record read's run
//            state (src/features/runs/data.ts runStateSql: its limits, its lane's reason, the jobs
//            ahead of it, the rates and running jobs its estimated start is made of) for
//            the last job of the backlog, the one with the most ahead
// Numbers only; the targets it is read against: a claim ≤ 5 ms at every size, and the
// 1M figure within 1.5× of the 1k figure.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../../src/tools/wrangler.ts';
import { benchCli } from './cli.ts';

/** The code before issue 14 (queue lanes, counters): what "today" means in the table. */
const BASELINE = '7e171c7495def63f227e84af515ef90314e4bceb';

const usage = `usage: npm run bench:scheduler -- [--sizes 1000,100000,1000000] [--orgs 10,10000] [--claims N] [--budget SECONDS] [--only baseline|current]
  --sizes    queued jobs to measure at (default 1000,100000,1000000)
  --orgs     organizations the jobs are spread over (default 10,10000)
  --claims   claims (and submissions) measured per cell, at most (default 200)
  --budget   seconds per measurement at most, whatever --claims says (default 10)
  --only     measure one side only`;

const cli = benchCli('bench:scheduler', usage, ['sizes', 'orgs', 'claims', 'budget', 'only']);
const ints = (name: string, fallback: string) =>
  (cli.string(name) ?? fallback).split(',').map((s) => {
    const n = Number(s);
    return Number.isInteger(n) && n >= 1 ? n : cli.fail(`--${name} takes positive integers`);
  });
const sizes = ints('sizes', '1000,100000,1000000');
const orgCounts = ints('orgs', '10,10000');
const maxOps = ints('claims', '200')[0];
const budgetMs = ints('budget', '10')[0] * 1000;
const only = cli.string('only');
if (only !== undefined && only !== 'baseline' && only !== 'current') cli.fail('--only is baseline or current');
const sides = only ? [only as 'baseline' | 'current'] : (['baseline', 'current'] as const);
const log = (m: string) => process.stderr.write(`bench:scheduler: ${m}\n`);

// ---------------------------------------------------------------------------
// D1's Worker API (the parts drizzle's D1 driver calls) over node:sqlite.

class Statement {
  private readonly db: SqliteD1;
  private readonly sql: string;
  private readonly params: unknown[];
  constructor(db: SqliteD1, sql: string, params: unknown[] = []) {
    this.db = db;
    this.sql = sql;
    this.params = params;
  }
  bind(...params: unknown[]) {
    return new Statement(this.db, this.sql, params);
  }
  private stmt(arrays: boolean): StatementSync {
    const s = this.db.statement(this.sql);
    s.setReturnArrays(arrays);
    return s;
  }
  private args() {
    return this.params.map((p) => (typeof p === 'boolean' ? Number(p) : p)) as (string | number | null)[];
  }
  rows(): Record<string, unknown>[] {
    return this.stmt(false).all(...this.args());
  }
  async all() {
    return { results: this.rows(), success: true, meta: {} };
  }
  async raw() {
    return this.stmt(true).all(...this.args()) as unknown as unknown[][];
  }
  async run() {
    return { results: this.rows(), success: true, meta: {} };
  }
  async first(column?: string) {
    const row = this.rows()[0];
    return row === undefined ? null : column ? row[column] : row;
  }
}

class SqliteD1 {
  private readonly cache = new Map<string, StatementSync>();
  readonly db: DatabaseSync;
  constructor(db: DatabaseSync) {
    this.db = db;
  }
  statement(sql: string): StatementSync {
    let s = this.cache.get(sql);
    if (!s) this.cache.set(sql, (s = this.db.prepare(sql)));
    return s;
  }
  prepare(sql: string) {
    return new Statement(this, sql);
  }
  /** A batch is a transaction, as in D1. */
  async batch(statements: Statement[]) {
    this.db.exec('BEGIN');
    try {
      const out = statements.map((s) => ({ results: s.rows(), success: true, meta: {} }));
      this.db.exec('COMMIT');
      return out;
    } catch (err) {
      this.db.exec('ROLLBACK');
      throw err;
    }
  }
  withSession() {
    return this;
  }
}

// ---------------------------------------------------------------------------
// The two trees and their modules.

interface Tree {
  side: 'baseline' | 'current';
  root: string;
  /** Migration files, in order. */
  migrations: string[];
  mod: (rel: string) => Promise<any>;
}

function treeAt(side: Tree['side'], root: string): Tree {
  const dir = path.join(root, 'migrations');
  return {
    side,
    root,
    migrations: readdirSync(dir)
      .filter((f) => f.endsWith('.sql'))
      .sort()
      .map((f) => path.join(dir, f)),
    mod: (rel) => import(pathToFileURL(path.join(root, rel)).href),
  };
}

function baselineTree(): { tree: Tree; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-scheduler-'));
  const root = path.join(dir, 'baseline');
  execFileSync('git', ['-C', ROOT, 'worktree', 'add', '--detach', '--force', root, BASELINE], { stdio: 'ignore' });
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(root, 'node_modules'));
  return {
    tree: treeAt('baseline', root),
    cleanup: () => {
      execFileSync('git', ['-C', ROOT, 'worktree', 'remove', '--force', root], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const runSql = (db: DatabaseSync, file: string) => {
  for (const statement of readFileSync(file, 'utf8').split('--> statement-breakpoint')) if (statement.trim()) db.exec(statement);
};

/** A fresh database with `jobs` queued jobs over `orgs` organizations, loaded before the last migration. */
function loadDatabase(tree: Tree, file: string, jobs: number, orgs: number, now: number): DatabaseSync {
  const db = new DatabaseSync(file);
  db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF;');
  const [last, ...earlier] = [...tree.migrations].reverse();
  for (const m of earlier.reverse()) runSql(db, m);
  const current = tree.side === 'current';
  if (!current) runSql(db, last);
  db.exec('BEGIN');
  db.exec(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${orgs - 1})
    INSERT INTO organizations (id, name) SELECT printf('org-%05d', i), 'bench' FROM n`);
  db.exec(
    `INSERT INTO configs (id, openvm_version, stark_backend_version, app_vm_commit, engine) VALUES ('cfg_bench', '2.0.1', '2.0.1', '0x00', 'dev')`,
  );
  // Queued for two minutes (older than the sweep's re-notify age), priorities 1-10.
  db.exec(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${jobs - 1})
    INSERT INTO jobs (id, kind, subject_id, org_id, config_id, engine, priority, num_gpus, status, queued_at, notified_at)
    SELECT printf('job-%08d', i), 'proof', printf('job-%08d', i), printf('org-%05d', i % ${orgs}), 'cfg_bench', 'dev', 1 + (i * 7) % 10, 1, 'queued', ${now - 120_000} + i, ${now - 120_000} FROM n`);
  db.exec('COMMIT');
  if (current) runSql(db, last); // the upgrade: counters and queue lanes built from the rows found
  // The current tree's tokens carry their scope (migrations/0010_fleet_scope.sql).
  db.exec(
    current
      ? `INSERT INTO agent_tokens (id, name, token_hash, engines, machine_type, max_gpus, max_leases) VALUES ('at_bench', 'bench', 'agent-token-hash', '["dev"]', 'm', 0, 10000)`
      : `INSERT INTO agent_tokens (id, name, token_hash) VALUES ('at_bench', 'bench', 'agent-token-hash')`,
  );
  db.exec(`INSERT INTO api_keys (id, org_id, key_hash, owner) VALUES ('key_bench', 'org-00000', 'api-key-hash', 'bench')`);
  // Measured proofs of the config, so a queued record's read estimates its start (the running jobs are the claims' leases).
  if (current)
    db.exec(
      `INSERT INTO proving_rates (config_id, machine_type, gpus, proof_type, jobs, cycles, proving_ms, cost) VALUES ('cfg_bench', 'm', 0, 'stark', 10, 1000, 100000, 0)`,
    );
  db.exec(
    `INSERT INTO agents (id, token_id, name, machine_type, gpus, engines, configs, last_seen_at) VALUES ('agent-live', 'at_bench', 'live', 'm', 0, '["dev"]', '[]', ${now})`,
  );
  return db;
}

// ---------------------------------------------------------------------------

interface Figures {
  claimP50: number;
  claimP99: number;
  claims: number;
  submitP50: number;
  sweepMs: number;
  /** A queued record's waiting reason (now only). */
  waitP50?: number;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
};

/** Runs `op` a few times unmeasured (statements prepared, pages cached), then measures it. */
async function timed(op: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < 3; i++) await op();
  const times: number[] = [];
  const started = performance.now();
  while (times.length < maxOps && (times.length < 5 || performance.now() - started < budgetMs)) {
    const t0 = performance.now();
    await op();
    times.push(performance.now() - t0);
  }
  return times;
}

async function measure(tree: Tree, jobs: number, orgs: number): Promise<Figures> {
  const now = Date.now();
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-scheduler-db-'));
  try {
    log(`${tree.side}: loading ${jobs.toLocaleString('en')} queued jobs over ${orgs.toLocaleString('en')} organizations`);
    const sqlite = loadDatabase(tree, path.join(dir, 'db.sqlite'), jobs, orgs, now);
    const d1 = new SqliteD1(sqlite);
    const { openDb } = await tree.mod('src/db/client.ts');
    const db = openDb(d1);
    const state = await tree.mod('src/jobs/state.ts');
    const dispatch = await tree.mod('src/jobs/dispatch.ts');
    const quotas = await tree.mod('src/jobs/quotas.ts');
    const { sweep } = await tree.mod('src/jobs/sweep.ts');
    // The current tree reads a rate card (src/jobs/rates.ts); the baseline a plain object.
    const machineRates = tree.side === 'current' ? { byType: new Map(), other: 0 } : { '*': 0 };
    const settings = { leaseTtlMs: 12_000, maxLeaseMs: 6 * 3_600_000, maxAttempts: 5, maxRetries: 2, machineRates };
    const limits = { maxActiveJobs: 10_000_000, maxGpus: 10_000_000 };
    const caps = { agentId: 'agent-live', machineType: 'm', gpus: 0, engines: ['dev'], configs: [] as string[] };
    let n = 0;

    log(`${tree.side}: claims`);
    const claimTimes = await timed(async () => {
      const lease = { id: `lease-${n++}`, tokenHash: `token-${n}` };
      const claimed =
        tree.side === 'current'
          ? (await state.claimJob(db, caps, lease, { tokenHash: 'agent-token-hash' }, settings, now)).job
          : await state.claimJob(db, caps, lease, settings, now);
      if (!claimed) throw new Error('the queue ran dry: use fewer --claims');
    });

    log(`${tree.side}: submissions`);
    const submitTimes = await timed(async () => {
      const job = {
        kind: 'proof',
        subjectId: `sub-${n++}`,
        orgId: 'org-00000',
        configId: 'cfg_bench',
        engine: 'dev',
        priority: 5,
        numGpus: 1,
      };
      if (tree.side === 'current') {
        await quotas.orgUsageQuery(db, 'org-00000', limits);
        await db.batch([
          dispatch.insertJob(db, job, { orgId: 'org-00000', owner: 'bench', keyId: 'key_bench', keyHash: 'api-key-hash' }, limits).query,
        ]);
      } else {
        await quotas.checkQuota(db, 'org-00000', 0, limits);
        await db.batch([dispatch.insertJob(db, job, limits).query]);
      }
    });

    let waitP50: number | undefined;
    if (tree.side === 'current') {
      log(`${tree.side}: waiting reads`);
      const { runStateSql } = await tree.mod('src/features/runs/data.ts');
      const { sql } = await import('drizzle-orm');
      const last = `job-${String(jobs - 1).padStart(8, '0')}`;
      const waitTimes = await timed(async () => {
        const [row] = await db.all(sql`SELECT ${runStateSql('proof', 'proofs')} AS s FROM (SELECT ${last} AS id) AS proofs`);
        if (!row?.s) throw new Error(`no run state for ${last}`);
        if (!(JSON.parse(row.s as string) as { rate: unknown }).rate) throw new Error(`no rates read for ${last}`);
      });
      waitP50 = pct(waitTimes, 50);
    }

    log(`${tree.side}: sweeps`);
    const env = {
      DB: d1,
      JOBS: { send: async () => {}, sendBatch: async () => {} },
      LEASE_CHECKS: { send: async () => {} },
      ARTIFACTS: { put: async () => null, list: async () => ({ objects: [], truncated: false }), get: async () => null },
      RENOTIFY_AFTER_SECONDS: '60',
    };
    const sweepTimes: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      // The current tree's sweep takes its bindings metered by the cron's budget (src/lib/metered.ts); its last argument is the clock.
      if (tree.side === 'current') {
        const { CallBudget, metered } = await tree.mod('src/lib/metered.ts');
        await sweep(metered(env, new CallBudget(Number.MAX_SAFE_INTEGER, 'bench')), now + i * 61_000);
      } else await sweep(db, env, now + i * 61_000);
      sweepTimes.push(performance.now() - t0);
    }
    sqlite.close();
    return {
      claimP50: pct(claimTimes, 50),
      claimP99: pct(claimTimes, 99),
      claims: claimTimes.length,
      submitP50: pct(submitTimes, 50),
      sweepMs: pct(sweepTimes, 50),
      waitP50,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const trees: Partial<Record<Tree['side'], Tree>> = {};
  let cleanup = () => {};
  if (sides.includes('baseline')) {
    const b = baselineTree();
    trees.baseline = b.tree;
    cleanup = b.cleanup;
  }
  if (sides.includes('current')) trees.current = treeAt('current', ROOT);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => (cleanup(), process.exit(130)));
  const results: { orgs: number; jobs: number; baseline?: Figures; current?: Figures }[] = [];
  try {
    for (const orgs of orgCounts)
      for (const jobs of sizes) {
        const row: (typeof results)[number] = { orgs, jobs };
        for (const side of sides) row[side] = await measure(trees[side]!, jobs, orgs);
        results.push(row);
      }
  } finally {
    cleanup();
  }

  const ms = (x: number | undefined) => (x === undefined ? '—' : x < 10 ? x.toFixed(2) : x.toFixed(0));
  const cell = (f: Figures | undefined) =>
    f ? `${ms(f.claimP50)} / ${ms(f.claimP99)} (${f.claims})`.padEnd(27) + `${ms(f.submitP50)}`.padEnd(9) + `${ms(f.sweepMs)}` : '—';
  console.log('bench:scheduler — the project’s own claim, quota and sweep statements on SQLite (node:sqlite), its own schema; ms');
  console.log(`today = ${BASELINE.slice(0, 7)} (before queue lanes and counters), now = this tree\n`);
  console.log(
    `${'orgs'.padStart(6)} ${'queued'.padStart(10)}   ${'today: claim p50 / p99 (n)'.padEnd(29)}${'submit'.padEnd(9)}${'sweep'.padEnd(6)}   ${'now: claim p50 / p99 (n)'.padEnd(27)}${'submit'.padEnd(9)}sweep`,
  );
  for (const r of results)
    console.log(
      `${String(r.orgs).padStart(6)} ${r.jobs.toLocaleString('en').padStart(10)}   ${cell(r.baseline).padEnd(44)}   ${cell(r.current)}`,
    );
  if (trees.current) {
    console.log('');
    for (const r of results.filter((x) => x.current?.waitP50 !== undefined))
      console.log(
        `now, ${r.orgs} orgs, ${r.jobs.toLocaleString('en')} queued: a queued record's waiting reason (run state read, last job of the backlog) p50 ${ms(r.current!.waitP50)} ms`,
      );
    console.log('');
    for (const orgs of orgCounts) {
      const mine = results.filter((r) => r.orgs === orgs && r.current);
      const first = mine[0].current!;
      const last = mine[mine.length - 1].current!;
      const worst = Math.max(...mine.map((r) => r.current!.claimP50));
      console.log(
        `now, ${orgs} orgs: claim p50 at most ${ms(worst)} ms (target ≤ 5); ${mine[mine.length - 1].jobs.toLocaleString('en')} vs ${mine[0].jobs.toLocaleString('en')} queued: ×${(last.claimP50 / first.claimP50).toFixed(2)} (target ≤ 1.5)`,
      );
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
