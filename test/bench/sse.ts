// `npm run bench:sse [-- --streams 10 --seconds 60]`: what an open event stream
// (GET /v1/proofs/{id}/events) costs D1. Opens N streams on a running proof against a
// local Worker (wrangler dev, its own state directory and port) whose D1 calls are
// counted inside the Worker (test/bench/workers/d1-counting.ts), changes the proof
// every 10 s so events keep flowing, and prints D1 round trips and statements per open
// stream per minute. Nothing else talks to the Worker during the measured window.
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { createApiKey, createConfig, createOrganization, lit } from '../../src/admin/statements.ts';
import {
  applyLocalMigrations,
  d1Execute,
  freePort,
  hasExited,
  ROOT,
  spawnWranglerDev,
  stopGroup,
  waitForHealthy,
} from '../../src/tools/wrangler.ts';
import { TENANT_DEFAULTS } from '../../src/lib/limits.ts';
import { SseReader } from '../sse.ts';
import { benchCli } from './cli.ts';

const usage = `usage: npm run bench:sse -- [--streams N] [--seconds S]
  --streams N   event streams open at once on one running proof (default 10)
  --seconds S   length of the measured window (default 60)`;

const cli = benchCli('bench:sse', usage, ['streams', 'seconds']);
const streams = cli.number('streams', 10, 1);
const seconds = cli.number('seconds', 60, 1);
const CHANGE_EVERY_MS = 10_000;

const log = (msg: string) => process.stderr.write(`bench:sse: ${msg}\n`);

interface Counts {
  roundTrips: number;
  statements: number;
  streamPolls: number;
}

async function main() {
  const dir = await mkdtemp(path.join(tmpdir(), 'zk-bench-sse-'));
  let worker: ChildProcess | undefined;
  const readers: SseReader[] = [];
  const cleanup = async () => {
    await Promise.all(readers.map((r) => r.cancel()));
    if (worker) await stopGroup(worker);
    await rm(dir, { recursive: true, force: true });
  };
  const onSignal = () => void cleanup().then(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const persistTo = path.join(dir, 'state');
    const target = { remote: false, persistTo };
    log(`local state in ${persistTo}: applying migrations and seeding a tenant`);
    await applyLocalMigrations(persistTo);
    const org = createOrganization('bench');
    // One API key per MAX_STREAMS_PER_KEY streams: a key may hold only that many open.
    const keys = await Promise.all(
      Array.from({ length: Math.ceil(streams / TENANT_DEFAULTS.MAX_STREAMS_PER_KEY) }, (_, i) =>
        createApiKey(org.output.at(-1)!, `bench${i}@localhost`),
      ),
    );
    if (streams > TENANT_DEFAULTS.MAX_STREAMS_PER_ORG)
      throw new Error(`at most ${TENANT_DEFAULTS.MAX_STREAMS_PER_ORG} streams: an organization may hold only that many open`);
    const [key] = keys as [(typeof keys)[number]];
    const config = createConfig({
      openvm_version: '2.0.0',
      stark_backend_version: '2.0.0',
      app_vm_commit: '0x' + 'ab'.repeat(32),
      engine: 'dev',
      deferral_enabled: false,
    });
    await d1Execute(target, [...org.sql, ...keys.flatMap((k) => k.sql), ...config.sql]);
    const auth = { 'Service-API-Key': key.output.at(-1)! };
    const authOf = (stream: number) => ({
      'Service-API-Key': keys[Math.floor(stream / TENANT_DEFAULTS.MAX_STREAMS_PER_KEY)].output.at(-1)!,
    });

    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    log(`starting wrangler dev on ${base} with the D1-counting entry (test/bench/workers/d1-counting.ts)`);
    worker = await spawnWranglerDev({ port, persistTo, extraArgs: ['test/bench/workers/d1-counting.ts', '--log-level', 'warn'] });
    let output = '';
    worker.stdout!.setEncoding('utf8').on('data', (s: string) => (output = (output + s).slice(-20_000)));
    worker.stderr!.setEncoding('utf8').on('data', (s: string) => (output = (output + s).slice(-20_000)));
    await waitForHealthy(`${base}/healthz`, worker).catch((err) => {
      process.stderr.write(output);
      throw err;
    });
    const counts = async (reset = false): Promise<Counts> =>
      (await fetch(`${base}/__bench/d1${reset ? '?reset=1' : ''}`)).json() as Promise<Counts>;

    // A program (made ready with SQL: the fleet is not part of this) and a proof, left
    // running: leased, mid-proof, by no agent, so its streams stay open all along.
    const form = new FormData();
    const elf = readFileSync(path.join(ROOT, 'test/guests/build/hello.elf'));
    form.append('elf', new Blob([elf]), 'hello.elf');
    form.append('vmexe', new Blob([new TextEncoder().encode('vmexe')]), 'hello.vmexe');
    const programRes = await fetch(`${base}/v1/programs?config_id=${config.output.at(-1)}`, { method: 'POST', headers: auth, body: form });
    const programId = ((await programRes.json()) as { id: string }).id;
    await d1Execute(target, [
      `UPDATE programs SET status = 'ready', app_exe_commit = ${lit('0x' + 'cd'.repeat(32))} WHERE id = ${lit(programId)};`,
    ]);
    const proofRes = await fetch(`${base}/v1/proofs?program_id=${programId}`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{"input": []}',
    });
    const proofId = ((await proofRes.json()) as { id: string }).id;
    await d1Execute(target, [
      `UPDATE jobs SET status = 'leased', lease_id = 'bench', lease_expires_at = ${Date.now() + 3_600_000} WHERE subject_id = ${lit(proofId)};`,
      `UPDATE proofs SET state = 'AppProving', launched_at = ${lit(new Date().toISOString())} WHERE id = ${lit(proofId)};`,
    ]);

    log(`opening ${streams} event streams on proof ${proofId}`);
    await counts(true);
    const events = new Array<number>(streams).fill(0);
    const opened: Promise<void>[] = [];
    for (let i = 0; i < streams; i++) {
      const res = await fetch(`${base}/v1/proofs/${proofId}/events`, { headers: authOf(i) });
      if (res.status !== 200) throw new Error(`opening a stream: ${res.status} ${await res.text()}`);
      const reader = new SseReader(res.body!);
      readers.push(reader);
      let first!: () => void;
      opened.push(new Promise((r) => (first = r)));
      void (async () => {
        for (let e = await reader.next(); e; e = await reader.next()) {
          events[i]++;
          if (events[i] === 1) first();
        }
      })().catch(() => {});
    }
    await Promise.all(opened);
    const opening = await counts(true);

    /**
     * Changes the proof's record through wrangler's CLI, not the Worker, so it costs the
     * count nothing. The local D1 is one SQLite file the Worker is reading from all the
     * while: a write from another process may find it busy, and is tried again.
     */
    const changeRecord = async (): Promise<boolean> => {
      for (let attempt = 1; attempt <= 5; attempt++) {
        try {
          await d1Execute(target, [`UPDATE proofs SET cells_used = cells_used + 1 WHERE id = ${lit(proofId)};`]);
          return true;
        } catch (err) {
          if (!/SQLITE_BUSY|database is locked/i.test(String(err)) || attempt === 5) {
            log(`changing the record failed (${String(err).slice(0, 200)}); measuring on without this change`);
            return false;
          }
          await new Promise((r) => setTimeout(r, 200 * attempt));
        }
      }
      return false;
    };

    log(`measuring for ${seconds} s (the proof's record changes every ${CHANGE_EVERY_MS / 1000} s)`);
    const started = Date.now();
    const received = events.reduce((a, b) => a + b, 0);
    let changes = 0;
    while (Date.now() - started < seconds * 1000) {
      await new Promise((r) => setTimeout(r, Math.min(CHANGE_EVERY_MS, seconds * 1000 - (Date.now() - started))));
      if (hasExited(worker)) {
        process.stderr.write(output);
        throw new Error('wrangler dev exited during the run');
      }
      if (Date.now() - started < seconds * 1000 && (await changeRecord())) changes++;
    }
    const measured = await counts();
    const minutes = (Date.now() - started) / 60_000;
    const perStream = (n: number) => (n / streams / minutes).toFixed(1);
    const eventsPerStream = (events.reduce((a, b) => a + b, 0) - received) / streams;

    console.log(
      `\nD1 cost of open event streams (GET /v1/proofs/{id}/events) on wrangler dev, ${streams} streams on one running proof, ${(minutes * 60).toFixed(0)} s, the record changed ${changes} time${changes === 1 ? '' : 's'}\n`,
    );
    console.log('| measure | total | per open stream per minute |');
    console.log('|---|---:|---:|');
    console.log(`| D1 round trips | ${measured.roundTrips} | ${perStream(measured.roundTrips)} |`);
    console.log(`| D1 statements | ${measured.statements} | ${perStream(measured.statements)} |`);
    console.log(`| of which the streams' polls | ${measured.streamPolls} | ${perStream(measured.streamPolls)} |`);
    console.log(`| events received | ${eventsPerStream * streams} | ${(eventsPerStream / minutes).toFixed(1)} |`);
    // While the streams opened, the first ones already polled: what opening cost is the rest.
    const openingTrips = opening.roundTrips - opening.streamPolls;
    const openingStatements = opening.statements - opening.streamPolls;
    console.log(
      `\nOpening a stream: ${(openingTrips / streams).toFixed(1)} D1 round trip(s), ${(openingStatements / streams).toFixed(1)} statements (the API key, the record and the stream's slot in one batch).`,
    );
  } finally {
    await cleanup();
  }
}

main().catch((err: unknown) => {
  console.error(`bench:sse: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
