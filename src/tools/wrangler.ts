// Running the project's wrangler from the operator command, `npm start` and the API
// bench. Always the locally installed wrangler, on the Node running these tools (the
// `node` devDependency: wrangler needs Node >= 22.12, the system one may be older),
// from the repository root so that `--local` means the same .wrangler/state that
// `wrangler dev` uses, and with telemetry off.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseMachineRates, type MachineRates } from '../jobs/rates.ts';
import { devVarsText, localSettings } from './dev-vars.ts';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
// wrangler's own CLI, run the way its bin/wrangler.js runs it, minus that wrapper's extra Node process.
const WRANGLER = ['--no-warnings', path.join(ROOT, 'node_modules', 'wrangler', 'wrangler-dist', 'cli.js')];

/** The environment every child process of these tools gets. */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ...extra,
    WRANGLER_SEND_METRICS: 'false',
    // Anything a child starts with `#!/usr/bin/env node` must find Node 22 too.
    PATH: [path.join(ROOT, 'node_modules', '.bin'), process.env.PATH ?? ''].join(path.delimiter),
  };
}

export class WranglerError extends Error {
  /** Everything wrangler printed, for the operator to read. */
  readonly output: string;
  constructor(message: string, output: string) {
    super(message);
    this.output = output;
  }
}

export interface WranglerRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `wrangler ...args` to completion, capturing its output. */
export function runWrangler(args: string[]): Promise<WranglerRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...WRANGLER, ...args], { cwd: ROOT, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr }));
  });
}

/** Which D1/R2 a command talks to: the local emulation (optionally in another directory) or Cloudflare. */
export interface Target {
  remote: boolean;
  /** A wrangler.toml environment (staging, production); none = the top-level (local/dev) one. */
  env?: string;
  /** Local state directory; wrangler's default is .wrangler/state, the one `wrangler dev` uses. */
  persistTo?: string;
  /** Another tree's wrangler.toml (its migrations); none = this tree's. */
  config?: string;
}

export function targetFlags(t: Target): string[] {
  return [
    t.remote ? '--remote' : '--local',
    ...(t.env ? ['--env', t.env] : []),
    ...(t.persistTo ? ['--persist-to', t.persistTo] : []),
    ...(t.config ? ['--config', t.config] : []),
  ];
}

export function describeTarget(t: Target): string {
  const where = t.remote ? 'remote (Cloudflare)' : `local (${t.persistTo ?? '.wrangler/state'})`;
  return t.env ? `${where}, env ${t.env}` : where;
}

export type Row = Record<string, unknown>;

interface D1StatementResult {
  results: Row[];
  success: boolean;
}

/** Tries of a local `wrangler d1 execute` that found the database locked (SQLITE_BUSY). */
const LOCAL_BUSY_TRIES = 5;

/**
 * Runs SQL statements in order in one `wrangler d1 execute` and returns each statement's
 * rows. Locally the database is a SQLite file that a running `wrangler dev` (npm start,
 * the e2e stacks) writes too; a statement that finds it locked failed as a whole (D1 runs
 * the statements of one execute as one batch), so it is tried again after a pause.
 */
export async function d1Execute(t: Target, statements: string[]): Promise<Row[][]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await d1ExecuteOnce(t, statements);
    } catch (err) {
      const busy = err instanceof WranglerError && /SQLITE_BUSY|database is locked/.test(err.message);
      if (!busy || t.remote || attempt >= LOCAL_BUSY_TRIES) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
    }
  }
}

async function d1ExecuteOnce(t: Target, statements: string[]): Promise<Row[][]> {
  const run = await runWrangler(['d1', 'execute', 'DB', ...targetFlags(t), '--json', '--yes', '--command', statements.join('\n')]);
  // With --json, stdout is one JSON document: the results, or {"error": {"text": ...}}.
  let parsed: unknown;
  try {
    parsed = JSON.parse(run.stdout.slice(Math.max(0, run.stdout.search(/[[{]/))));
  } catch {
    parsed = undefined;
  }
  if (run.code !== 0 || !Array.isArray(parsed)) {
    const text = (parsed as { error?: { text?: string } } | undefined)?.error?.text;
    throw new WranglerError(`wrangler d1 execute failed: ${text ?? `exit code ${run.code}`}`, run.stdout + run.stderr);
  }
  return (parsed as D1StatementResult[]).map((r) => r.results ?? []);
}

/** Applies the migrations in migrations/ to a local D1 (creating it on first use). */
export async function applyLocalMigrations(persistTo?: string, config?: string): Promise<void> {
  const run = await runWrangler(['d1', 'migrations', 'apply', 'DB', ...targetFlags({ remote: false, persistTo, config })]);
  if (run.code !== 0) throw new WranglerError(`wrangler d1 migrations apply failed (exit code ${run.code})`, run.stdout + run.stderr);
}

/** The R2 bucket bound as ARTIFACTS in a wrangler.toml environment. */
export async function artifactsBucket(env?: string): Promise<string> {
  const { unstable_readConfig } = await import('wrangler');
  const config = unstable_readConfig({ config: path.join(ROOT, 'wrangler.toml'), env }, { hideWarnings: true });
  const buckets: { binding: string; bucket_name?: string }[] = config.r2_buckets;
  const bucket = buckets.find((b) => b.binding === 'ARTIFACTS')?.bucket_name;
  if (!bucket) throw new Error(`wrangler.toml has no ARTIFACTS R2 bucket${env ? ` in env ${env}` : ''}`);
  return bucket;
}

/**
 * The mail settings of a wrangler.toml environment (its vars; locally .dev.vars, where the
 * outbox is set: src/tools/dev-vars.ts), with MAIL_API_KEY from the operator's own
 * environment (a Worker secret cannot be read back). A MAIL_* variable in the operator's
 * environment overrides the var (`MAIL_SENDER=` unsets it). PUBLIC_ORIGIN, where the links
 * it mails point: the environment's var; locally where `npm start` serves (its PORT).
 */
export async function mailSettings(
  env?: string,
): Promise<{ MAIL_SENDER?: string; MAIL_API_URL?: string; MAIL_FROM?: string; MAIL_API_KEY?: string; PUBLIC_ORIGIN?: string }> {
  const { unstable_readConfig } = await import('wrangler');
  const config = unstable_readConfig({ config: path.join(ROOT, 'wrangler.toml'), env }, { hideWarnings: true });
  const vars = { ...(env === undefined ? localSettings(path.join(ROOT, '.dev.vars')) : {}), ...config.vars } as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const setting = (name: 'MAIL_SENDER' | 'MAIL_API_URL' | 'MAIL_FROM') => process.env[name] ?? text(vars[name]);
  return {
    MAIL_SENDER: setting('MAIL_SENDER'),
    MAIL_API_URL: setting('MAIL_API_URL'),
    MAIL_FROM: setting('MAIL_FROM'),
    MAIL_API_KEY: process.env.MAIL_API_KEY,
    PUBLIC_ORIGIN: text(vars.PUBLIC_ORIGIN) ?? (env === undefined ? `http://127.0.0.1:${process.env.PORT ?? 8787}` : undefined),
  };
}

/**
 * The rate card (MACHINE_RATES) of a wrangler.toml environment's vars: the rates its
 * Worker bills machine types at (src/jobs/settings.ts parseMachineRates).
 */
export async function machineRates(env?: string): Promise<MachineRates> {
  const { unstable_readConfig } = await import('wrangler');
  const config = unstable_readConfig({ config: path.join(ROOT, 'wrangler.toml'), env }, { hideWarnings: true });
  const vars = new Map(Object.entries((config.vars ?? {}) as Record<string, unknown>));
  const card = vars.get('MACHINE_RATES');
  return parseMachineRates(typeof card === 'string' ? card : undefined, (msg) => process.stderr.write(`admin: ${msg}\n`));
}

export async function r2Put(t: Target, bucket: string, key: string, file: string): Promise<void> {
  const run = await runWrangler(['r2', 'object', 'put', `${bucket}/${key}`, '--file', file, ...targetFlags(t)]);
  if (run.code !== 0) throw new WranglerError(`wrangler r2 object put failed (exit code ${run.code})`, run.stdout + run.stderr);
}

// ---------------------------------------------------------------------------
// Long-running children: wrangler dev and the prover-agent.

/**
 * Starts a long-running child in its own process group, so that a terminal's Ctrl-C
 * reaches only the parent, which then stops its children in the order it chooses,
 * and so that stopping it also stops what it started (wrangler dev runs workerd).
 */
export function spawnGroup(command: string, args: string[], env: NodeJS.ProcessEnv = childEnv()): ChildProcess {
  return spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
}

export interface DevOptions {
  port: number;
  persistTo?: string;
  extraArgs?: string[];
  /**
   * Where the Worker's local-only settings (src/tools/dev-vars.ts) come from: the
   * repository's .dev.vars, the developer's own (`npm start`), or, by default, a file of
   * their local values written beside the local state, so that a test or bench stack
   * never depends on what a developer keeps in .dev.vars.
   */
  devVars?: 'dotfile' | 'local-values';
  /** The devtools inspector's port (a bench's CPU profile); by default a free one. */
  inspectorPort?: number;
}

/**
 * Starts `wrangler dev`. Its devtools inspector gets a free port of its own: the default
 * (9229) is taken by any other wrangler dev on the machine (`npm start` next to the test
 * suite or a bench), and workerd then fails to start.
 */
export async function spawnWranglerDev(o: DevOptions): Promise<ChildProcess> {
  let envFile: string[] = [];
  if ((o.devVars ?? 'local-values') === 'local-values') {
    const file = path.join(o.persistTo ?? mkdtempSync(path.join(tmpdir(), 'zk-dev-vars-')), 'local-dev-vars.env');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, devVarsText(), { mode: 0o600 });
    envFile = ['--env-file', file];
  }
  return spawnGroup(
    process.execPath,
    [
      ...WRANGLER,
      'dev',
      '--ip',
      '127.0.0.1',
      '--port',
      String(o.port),
      '--inspector-port',
      String(o.inspectorPort ?? (await freePort())),
      '--show-interactive-dev-session=false',
      ...envFile,
      ...(o.persistTo ? ['--persist-to', o.persistTo] : []),
      ...(o.extraArgs ?? []),
      // The links it mails point where it listens (PUBLIC_ORIGIN, src/features/accounts/mail.ts).
      // Last: `--var` takes every word after it, so an entry (a bench's) before it would be read as a var.
      '--var',
      `PUBLIC_ORIGIN:http://127.0.0.1:${o.port}`,
    ],
    childEnv({ WRANGLER_HIDE_BANNER: 'true' }),
  );
}

/** Writes each line of a child's stdout and stderr to ours, prefixed. */
export function forwardOutput(child: ChildProcess, prefix: string, shown: (line: string) => boolean = () => true): void {
  const pipe = (from: NodeJS.ReadableStream | null, to: NodeJS.WritableStream) => {
    if (from) createInterface({ input: from, crlfDelay: Infinity }).on('line', (line) => shown(line) && to.write(`${prefix} ${line}\n`));
  };
  pipe(child.stdout, process.stdout);
  pipe(child.stderr, process.stderr);
}

export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** Resolves once the child has exited (at once if it already has). */
export async function exited(child: ChildProcess): Promise<void> {
  if (!hasExited(child)) await once(child, 'exit');
}

/** SIGTERM to the child's process group; SIGKILL if it is still there after `graceMs`. */
export async function stopGroup(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (hasExited(child) || child.pid === undefined) return;
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // The group is gone already.
    }
  };
  signalGroup('SIGTERM');
  const timer = setTimeout(() => signalGroup('SIGKILL'), graceMs);
  await exited(child);
  clearTimeout(timer);
  // What the leader started may outlive it: make sure the whole group is gone.
  signalGroup('SIGKILL');
}

/** Kills the child's group at once; for `process.on('exit')`, where nothing can be awaited. */
export function killGroupNow(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // The group is gone already.
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `url` until it answers 200; fails early if `child` exits, or after `timeoutMs`. */
export async function waitForHealthy(url: string, child: ChildProcess, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (hasExited(child)) throw new Error(`wrangler dev exited (code ${child.exitCode ?? child.signalCode}) before ${url} answered`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      if (res.ok) return;
    } catch {
      // Not listening yet.
    }
    await sleep(250);
  }
  throw new Error(`${url} did not answer within ${timeoutMs / 1000} s`);
}

/** Whether nothing listens on 127.0.0.1:port. */
export async function portIsFree(port: number): Promise<boolean> {
  const server = createServer();
  try {
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    return true;
  } catch {
    return false;
  } finally {
    server.close();
  }
}

export interface PortHolder {
  pid: number;
  /** Its process group: what `kill -- -<pgid>` stops (wrangler dev and its workerd are one group here). */
  pgid: number;
  command: string;
  /** The group leader's command line, when another process leads the group. */
  leader?: string;
}

/** A process's command line, shortened for one line of a message. */
function commandLine(pid: number): string | undefined {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    const line = argv.map((a) => (a.length > 60 ? '…' + a.slice(-40) : a)).join(' ');
    return line.length > 160 ? line.slice(0, 159) + '…' : line;
  } catch {
    return undefined;
  }
}

/**
 * Which process listens on TCP `port`, read from /proc (Linux): the sockets in LISTEN
 * state on that port (/proc/net/tcp, tcp6), then the process holding one of them.
 * Undefined elsewhere, or when the holder is another user's process we cannot see.
 */
export function portHolder(port: number): PortHolder | undefined {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const row of text.split('\n').slice(1)) {
      const cols = row.trim().split(/\s+/);
      // local_address is ADDR:PORT in hex; st 0A is LISTEN; the inode is column 10.
      if (cols.length > 9 && cols[1].endsWith(`:${hexPort}`) && cols[3] === '0A') inodes.add(cols[9]);
    }
  }
  if (inodes.size === 0) return undefined;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    const holds = fds.some((fd) => {
      try {
        const target = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${entry}/fd/${fd}`));
        return target !== null && inodes.has(target[1]);
      } catch {
        return false;
      }
    });
    if (!holds) continue;
    const pid = Number(entry);
    // /proc/<pid>/stat: "pid (comm) state ppid pgrp ...": comm may hold spaces, so read after its ')'.
    const pgid = Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[2] ?? pid);
    return { pid, pgid, command: commandLine(pid) ?? '?', ...(pgid !== pid ? { leader: commandLine(pgid) } : {}) };
  }
  return undefined;
}

/** "port N is in use by …", saying what holds it when that can be seen, and how to stop it. */
export function portInUseMessage(port: number, what: string): string {
  const holder = portHolder(port);
  if (!holder) return `${what} port ${port} is in use (another npm start or wrangler dev?)`;
  const group = holder.leader ? `, in process group ${holder.pgid} led by: ${holder.leader}` : '';
  return `${what} port ${port} is in use by pid ${holder.pid} (${holder.command}${group}); stop it with \`kill -- -${holder.pgid}\``;
}

/** A port nothing listens on right now, chosen by the OS. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}
