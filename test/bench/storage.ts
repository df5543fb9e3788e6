// npm run bench:storage [-- --proofs 150 --agents 2]
//
// What a finished proof keeps in D1, table by table and index by index, events and
// webhook deliveries included. A local stack (wrangler dev, real dev-engine agents, an
// organization with a webhook endpoint, so every proof's events make deliveries)
// proves N small proofs end to end; the stack's local D1 file is measured with SQLite's
// `dbstat` virtual table (every b-tree's pages: tables and indexes, as D1 stores and
// bills them) before the proofs, once they have all finished, and after the cron sweep
// deleted what only a running job needed (ended leases; the stack runs with
// LEASE_KEEP_SECONDS=60 and the sweep is fired past it). Numbers only: bytes per proof
// as the delta over N, per b-tree, largest first, and the total.
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { caller, registerGuest, startStack, type AgentProcess } from '../e2e/stack.ts';
import { benchCli } from './cli.ts';

const usage = `usage: npm run bench:storage -- [--proofs N] [--agents N]
  --proofs   small proofs to submit and complete (default 150)
  --agents   dev-engine agents proving them (default 2)`;
const cli = benchCli('bench:storage', usage, ['proofs', 'agents']);
const N = cli.number('proofs', 150, 1);
const AGENTS = cli.number('agents', 2, 1);
const log = (m: string) => process.stderr.write(`bench:storage: ${m}\n`);

/** The stack's local D1 database file (miniflare keeps one SQLite file per database). */
function d1File(persistDir: string): string {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (p.includes('D1DatabaseObject') && name.endsWith('.sqlite') && name !== 'metadata.sqlite') found.push(p);
    }
  };
  walk(persistDir);
  if (found.length !== 1) throw new Error(`expected one local D1 file under ${persistDir}, found ${found.join(', ') || 'none'}`);
  return found[0];
}

type Sizes = Map<string, { bytes: number; payload: number; kind: string }>;

/** Bytes per b-tree (pages × page size, and the payload in them), with the sqlite3 CLI's dbstat. */
function measure(file: string): Sizes {
  const query = `SELECT d.name, sum(d.pgsize), sum(d.payload), coalesce(m.type, 'table') FROM dbstat d LEFT JOIN sqlite_master m ON m.name = d.name GROUP BY d.name;`;
  let out: string;
  try {
    out = execFileSync('sqlite3', ['-readonly', '-separator', '\t', file, query], { encoding: 'utf8' });
  } catch (err) {
    throw new Error(`sqlite3 with dbstat is needed (Debian: apt-get install sqlite3): ${(err as Error).message}`);
  }
  const sizes: Sizes = new Map();
  for (const line of out.trim().split('\n')) {
    const [name, bytes, payload, kind] = line.split('\t');
    sizes.set(name, { bytes: Number(bytes), payload: Number(payload), kind: kind });
  }
  return sizes;
}

/** The average stored bytes of each column of `table` (what a row's payload is made of), widest first. */
function columnWidths(file: string, table: string): string {
  const cols = execFileSync('sqlite3', ['-readonly', file, `SELECT name FROM pragma_table_info('${table}');`], { encoding: 'utf8' })
    .trim()
    .split('\n');
  const sums = cols.map((c) => `coalesce(avg(length(CAST("${c}" AS BLOB))), 0)`).join(', ');
  const out = execFileSync('sqlite3', ['-readonly', '-separator', '\t', file, `SELECT ${sums} FROM "${table}";`], { encoding: 'utf8' })
    .trim()
    .split('\t')
    .map(Number);
  return cols
    .map((c, i) => [c, out[i]] as const)
    .filter(([, b]) => b > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([c, b]) => `${c} ${b.toFixed(0)}`)
    .join(', ');
}

function perProof(before: Sizes, after: Sizes): { name: string; kind: string; bytes: number; payload: number }[] {
  return [...after.entries()]
    .map(([name, a]) => ({
      name,
      kind: a.kind,
      bytes: (a.bytes - (before.get(name)?.bytes ?? 0)) / N,
      payload: (a.payload - (before.get(name)?.payload ?? 0)) / N,
    }))
    .filter((r) => r.bytes !== 0 || r.payload !== 0)
    .sort((x, y) => y.bytes - x.bytes);
}

function print(title: string, rows: ReturnType<typeof perProof>) {
  console.log(`\n${title}`);
  console.log('b-tree'.padEnd(40) + 'kind'.padEnd(8) + 'pages B/proof'.padStart(15) + 'payload B/proof'.padStart(17));
  for (const r of rows)
    console.log(r.name.padEnd(40) + r.kind.padEnd(8) + r.bytes.toFixed(0).padStart(15) + r.payload.toFixed(0).padStart(17));
  const total = rows.reduce((s, r) => s + r.bytes, 0);
  const payload = rows.reduce((s, r) => s + r.payload, 0);
  console.log('total'.padEnd(48) + total.toFixed(0).padStart(15) + payload.toFixed(0).padStart(17));
  const hooks = rows.filter((r) => r.name.startsWith('webhook_') || r.name.includes('_webhook_')).reduce((s, r) => s + r.bytes, 0);
  console.log(
    `  of which webhook deliveries and attempts ${hooks.toFixed(0)} (kept WEBHOOK_RETENTION_DAYS; this receiver never answers, so each delivery has several attempts), the rest ${(total - hooks).toFixed(0)}`,
  );
  return { total, rest: total - hooks };
}

/** Rows of a table in the file (the archive's stubs and objects). */
const rowsOf = (file: string, table: string) =>
  Number(execFileSync('sqlite3', ['-readonly', file, `SELECT count(*) FROM "${table}";`], { encoding: 'utf8' }).trim());

// The archive takes finished records past ARCHIVE_AFTER_DAYS (30 in a deployment): here
// 0.003 days (259 s), past the lease sweep's measurement, so each phase is measured apart.
const ARCHIVE_AFTER_S = 259.2;
const stack = await startStack({
  vars: { LEASE_KEEP_SECONDS: '60', WEBHOOKS_ALLOW_LOOPBACK: 'true', ARCHIVE_AFTER_DAYS: String(ARCHIVE_AFTER_S / 86400) },
});
const agents: AgentProcess[] = [];
try {
  const api = caller(stack);
  for (let i = 0; i < AGENTS; i++) agents.push(await stack.startAgent({ name: `storage-${i}`, extraArgs: ['--poll-interval', '0.05'] }));
  const program = await registerGuest(api, stack.devConfig, 'hello.elf');
  // Every proof's events make deliveries (to a port nothing listens on: they fail and retry, as a busy receiver's would).
  await api.json('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/hook', description: 'bench:storage' });
  const file = d1File(stack.persistDir);
  const before = measure(file);
  log(`proving ${N} proofs with ${AGENTS} agents`);
  const ids: string[] = [];
  for (let i = 0; i < N; i++) ids.push((await api.json('POST', `/v1/proofs?program_id=${program}`, { input: ['0x0101'] })).id);
  for (const id of ids)
    await api.waitFor(`/v1/proofs/${id}`, (p: { state: string }) => ['Succeeded', 'Failed', 'Canceled'].includes(p.state), 600_000);
  const lastEnd = Date.now();
  // Log compaction runs after each job's end; give the last ones a moment, then sweep what is pending.
  await new Promise((r) => setTimeout(r, 2000));
  await stack.sweep();
  const finished = measure(file);
  const atEnd = print(`D1 bytes per finished proof (${N} proofs), as they end`, perProof(before, finished));
  // Past LEASE_KEEP_SECONDS, the sweep deletes the ended leases.
  log('waiting past LEASE_KEEP_SECONDS (60 s) for the sweep');
  await new Promise((r) => setTimeout(r, 62_000));
  await stack.sweep();
  await new Promise((r) => setTimeout(r, 3000));
  const swept = measure(file);
  const afterSweep = print('D1 bytes per finished proof after the sweep (ended leases deleted)', perProof(before, swept));
  const early = rowsOf(file, 'archived');
  if (early) log(`note: ${early} proofs were archived before this measurement (a slow run): the figures above are low`);
  for (const table of ['proofs', 'jobs']) console.log(`\n${table}: average bytes per column: ${columnWidths(file, table)}`);
  // Past ARCHIVE_AFTER_DAYS, the sweep moves them to R2 (bounded per run: a few runs).
  const wait = lastEnd + ARCHIVE_AFTER_S * 1000 + 5000 - Date.now();
  log(`waiting ${Math.max(0, wait / 1000).toFixed(0)} s past ARCHIVE_AFTER_DAYS for the archive`);
  await new Promise((r) => setTimeout(r, Math.max(0, wait)));
  for (let run = 0; run < 5 && rowsOf(file, 'archived') < N; run++) {
    await stack.sweep();
    await new Promise((r) => setTimeout(r, 3000));
  }
  const archivedRows = rowsOf(file, 'archived');
  const archived = measure(file);
  const afterArchive = print(
    `D1 bytes per proof once archived (${archivedRows} of ${N} in ${rowsOf(file, 'archive_objects')} R2 objects)`,
    perProof(before, archived),
  );
  console.log(`
per proof: ${atEnd.total.toFixed(0)} B as it ends, ${afterSweep.total.toFixed(0)} B once swept (${afterSweep.rest.toFixed(0)} B once its webhook deliveries are swept too), ${afterArchive.rest.toFixed(0)} B once archived (webhook rows aside)
a 10 GB D1 database holds ~${(10e9 / afterSweep.rest / 1e6).toFixed(1)} M finished proofs younger than ARCHIVE_AFTER_DAYS (~${(10e9 / afterSweep.total / 1e6).toFixed(1)} M while a failing endpoint's deliveries are kept) and ~${(10e9 / Math.max(afterArchive.rest, 1) / 1e6).toFixed(0)} M archived ones`);
} finally {
  for (const a of agents) a.signal('SIGTERM');
  await Promise.all(agents.map((a) => a.exited));
  await stack.stop();
}
