// `npm run bench:api [-- --concurrency 16 --duration 10 | --requests N]`: latency and
// throughput of the hot API routes on the local runtime (wrangler dev: workerd with
// local D1 and R2), next to GET /healthz, a route that touches neither auth nor D1,
// as the floor. What a route costs above the floor is the Worker's own work.
// It uses its own state directory and port, so it never touches `npm start`'s state.
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createApiKey, createConfig, createOrganization, lit, setOrganizationLimits } from '../../src/admin/statements.ts';
import { applyLocalMigrations, d1Execute, freePort, hasExited, ROOT, spawnWranglerDev, stopGroup, waitForHealthy } from '../../src/tools/wrangler.ts';
import type { ChildProcess } from 'node:child_process';
import { benchCli } from './cli.ts';

const usage = `usage: npm run bench:api -- [--concurrency N] [--duration SECONDS | --requests N] [--warmup N]
  --concurrency N   requests in flight at once (default 16)
  --duration S      seconds measured per route (default 10)
  --requests N      instead of a duration: exactly N requests per route
  --warmup N        unmeasured requests per route first (default 4 × concurrency)`;

const cli = benchCli('bench:api', usage, ['concurrency', 'duration', 'requests', 'warmup']);
const concurrency = cli.number('concurrency', 16, 1);
const durationMs = cli.number('duration', 10, 1) * 1000;
const fixedRequests = cli.string('requests') === undefined ? undefined : cli.number('requests', 1, 1);
const warmup = cli.number('warmup', 4 * concurrency, 0);

const BIG_ELF = path.join(ROOT, 'test', 'guests', 'build', 'big.elf');
const HELLO_ELF = path.join(ROOT, 'test', 'guests', 'build', 'hello.elf');
const VMEXE = new TextEncoder().encode('opaque vmexe bytes for the bench');

const log = (msg: string) => process.stderr.write(`bench:api: ${msg}\n`);

/**
 * The bench organization's own quotas (set-org-limits): every measured POST creates a
 * job and nothing here runs them, so the default quota (ORG_MAX_ACTIVE_JOBS, 1000
 * queued-or-running jobs) would answer 429 part-way through a run. These are far
 * above what any run submits, so every measured request is a real success.
 */
const BENCH_ORG_LIMITS = { maxActiveJobs: 10_000_000, maxGpus: 10_000_000 };

interface Route {
  label: string;
  path: string;
  init: () => RequestInit;
  /** Statuses that count as success. */
  ok: number[];
}

interface Result {
  label: string;
  ok: number;
  errors: number;
  firstError?: string;
  p50: number;
  p99: number;
  rps: number;
}

function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** `concurrency` loops sending the route's request until the request count or the duration is reached. */
async function load(baseUrl: string, route: Route, worker: ChildProcess, budget: { requests?: number; ms?: number }): Promise<Result> {
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let issued = 0;
  const start = performance.now();
  const more = () => {
    if (hasExited(worker)) return false;
    if (budget.requests !== undefined) return issued++ < budget.requests;
    return performance.now() - start < budget.ms!;
  };
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (more()) {
        const t = performance.now();
        try {
          const res = await fetch(baseUrl + route.path, route.init());
          const body = await res.text();
          if (route.ok.includes(res.status)) latencies.push(performance.now() - t);
          else {
            errors++;
            firstError ??= `${res.status} ${body.slice(0, 300)}`;
          }
        } catch (err) {
          errors++;
          firstError ??= String(err);
        }
      }
    }),
  );
  const elapsed = performance.now() - start;
  latencies.sort((a, b) => a - b);
  return {
    label: route.label,
    ok: latencies.length,
    errors,
    firstError,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    rps: (latencies.length / elapsed) * 1000,
  };
}

function table(results: Result[]): string {
  const floor = results[0].p50;
  const rows = [
    ['route', 'p50 ms', 'p99 ms', 'req/s', 'p50 / floor', 'ok', 'errors'],
    ...results.map((r) => [r.label, r.p50.toFixed(2), r.p99.toFixed(2), r.rps.toFixed(0), (r.p50 / floor).toFixed(2) + '×', String(r.ok), String(r.errors)]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('   ')).join('\n');
}

async function json<T>(res: Response, what: string): Promise<T> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${what}: ${res.status} ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
}

function programForm(elf: Blob): FormData {
  const form = new FormData();
  form.append('elf', elf, 'program.elf');
  form.append('vmexe', new Blob([VMEXE]), 'program.vmexe');
  return form;
}

async function main(): Promise<void> {
  if (!existsSync(BIG_ELF)) throw new Error(`${path.relative(ROOT, BIG_ELF)} is missing: build the test guests (npm run build:guests)`);
  const bigElf = new Blob([readFileSync(BIG_ELF)]);
  const helloElf = new Blob([readFileSync(HELLO_ELF)]);

  const dir = await mkdtemp(path.join(tmpdir(), 'zk-bench-api-'));
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
    log(`local state in ${persistTo}: applying migrations and seeding a tenant`);
    await applyLocalMigrations(persistTo);
    const org = createOrganization('bench');
    const orgId = org.output.at(-1)!;
    const key = await createApiKey(orgId, 'bench@localhost');
    const limits = setOrganizationLimits(orgId, BENCH_ORG_LIMITS);
    const config = createConfig({ openvm_version: '1.4.0', stark_backend_version: '1.2.0', app_vm_commit: '0x' + 'ab'.repeat(32), engine: 'dev', deferral_enabled: false });
    await d1Execute({ remote: false, persistTo }, [...org.sql, ...limits.sql, ...key.sql, ...config.sql]);
    const apiKey = key.output.at(-1)!;
    const configId = config.output.at(-1)!;

    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    log(`starting wrangler dev on ${baseUrl}`);
    worker = await spawnWranglerDev({ port, persistTo, extraArgs: ['--log-level', 'warn'] });
    let workerOutput = '';
    worker.stdout!.setEncoding('utf8').on('data', (s: string) => (workerOutput = (workerOutput + s).slice(-20_000)));
    worker.stderr!.setEncoding('utf8').on('data', (s: string) => (workerOutput = (workerOutput + s).slice(-20_000)));
    try {
      await waitForHealthy(`${baseUrl}/healthz`, worker);
    } catch (err) {
      process.stderr.write(workerOutput);
      throw err;
    }

    const auth = { 'Service-API-Key': apiKey };
    const { id: programId } = await json<{ id: string }>(
      await fetch(`${baseUrl}/v1/programs?config_id=${configId}`, { method: 'POST', headers: auth, body: programForm(helloElf) }),
      'registering the program',
    );
    // The program's commit job is the fleet's part; the bench only needs the program ready.
    await d1Execute({ remote: false, persistTo }, [
      `UPDATE programs SET status = 'ready', app_exe_commit = ${lit('0x' + 'cd'.repeat(32))} WHERE id = ${lit(programId)};`,
    ]);
    const proofBody = JSON.stringify({ input: ['0x0148656c6c6f'] });
    const proofInit = (): RequestInit => ({ method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: proofBody });
    const { id: proofId } = await json<{ id: string }>(await fetch(`${baseUrl}/v1/proofs?program_id=${programId}`, proofInit()), 'submitting a proof');

    const routes: Route[] = [
      { label: 'GET /healthz (floor)', path: '/healthz', init: () => ({}), ok: [200] },
      { label: 'GET /v1/proofs/{id}', path: `/v1/proofs/${proofId}`, init: () => ({ headers: auth }), ok: [200] },
      { label: 'POST /v1/proofs (JSON input)', path: `/v1/proofs?program_id=${programId}`, init: proofInit, ok: [200] },
      {
        label: `POST /v1/programs (${(bigElf.size / 2 ** 20).toFixed(1)} MiB ELF)`,
        path: `/v1/programs?config_id=${configId}`,
        init: () => ({ method: 'POST', headers: auth, body: programForm(bigElf) }),
        ok: [200, 201],
      },
    ];
    const budget = fixedRequests !== undefined ? { requests: fixedRequests } : { ms: durationMs };
    const results: Result[] = [];
    for (const route of routes) {
      log(`${route.label}: ${warmup} warm-up requests, then ${fixedRequests !== undefined ? `${fixedRequests} requests` : `${durationMs / 1000} s`} at concurrency ${concurrency}`);
      await load(baseUrl, route, worker, { requests: warmup });
      const result = await load(baseUrl, route, worker, budget);
      if (hasExited(worker)) {
        process.stderr.write(workerOutput);
        throw new Error('wrangler dev exited during the run');
      }
      if (result.errors) log(`${route.label}: ${result.errors} failed requests; the first: ${result.firstError}`);
      if (result.firstError?.startsWith('429 '))
        log(
          result.firstError.includes('Quota exceeded')
            ? `${route.label}: refused by the organization's job quota: this run submits more than BENCH_ORG_LIMITS allows; raise them`
            : `${route.label}: throttled by the local rate limits ([[ratelimits]] in wrangler.toml): this run sends more than they allow; raise them to measure past them`,
        );
      results.push(result);
    }

    console.log(`\nAPI latency on wrangler dev (local workerd, D1, R2, under the local rate limits of wrangler.toml, organization quotas raised to ${BENCH_ORG_LIMITS.maxActiveJobs} jobs), concurrency ${concurrency}, ${fixedRequests !== undefined ? `${fixedRequests} requests` : `${durationMs / 1000} s`} per route, Node ${process.version}\n`);
    console.log(table(results));
    if (results.some((r) => r.errors > 0)) process.exitCode = 1;
  } finally {
    await cleanup();
  }
}

main().catch((err: unknown) => {
  console.error(`bench:api: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
