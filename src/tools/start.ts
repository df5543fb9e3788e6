// `npm start`: the whole service on this machine. Applies the migrations to the local
// D1, seeds a dev organization, API key, config and agent token (idempotently, with the
// operator command's statements), runs the Worker under `wrangler dev` and one
// prover-agent with the dev engine, and prints what a developer needs to call the API.
// A dev key or token that was revoked stays revoked: start says so and makes a new one.
//
// Environment: PORT (8787), PERSIST_DIR (local state; default .wrangler/state),
// DEV_API_KEY (use this exact API key), AGENT_METRICS_PORT (9464), FLEET_LOGS=1 (or
// `npm start -- --fleet-logs`: also print the fleet's own routine requests).
// Ctrl-C / SIGTERM / SIGHUP (a closed terminal) stops the agent, then the Worker, and
// exits 0; if the Worker dies the agent is stopped and start exits non-zero. An agent that
// fails leaves the Worker up. A port in use is refused, naming the process that holds it.
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  createAgentToken,
  createApiKey,
  createConfig,
  createOrganization,
  createUser,
  setAgentTokenLimits,
  storedCredentials,
  DEV_ENGINE_OPENVM_TOML,
  devAppVmCommit,
  setConfigOpenvmToml,
  TARGET_RELEASE,
  upgradeDevConfig,
} from '../admin/statements.ts';
import { hashPassword } from '../features/accounts/password.ts';
import { randomToken } from '../lib/crypto.ts';
import { ensureDevVars } from './dev-vars.ts';
import {
  applyLocalMigrations,
  d1Execute,
  exited,
  forwardOutput,
  hasExited,
  killGroupNow,
  portInUseMessage,
  portIsFree,
  ROOT,
  spawnGroup,
  spawnWranglerDev,
  stopGroup,
  waitForHealthy,
  WranglerError,
  type Row,
} from './wrangler.ts';

const DEV_ORG_ID = 'org_dev';
const DEV_OWNER = 'dev@localhost';
/** Fixed so that it survives restarts and can be written into scripts and docs. */
const DEV_CONFIG_ID = 'cfg_00000000000000000000DEVCFG';
/** What the dev config was seeded with before it described the release (`npm start` upgrades such a local database). */
const OLD_DEV_APP_VM_COMMIT = '0x' + 'de'.repeat(32);
const DEV_AGENT_NAME = 'local-dev';
/** What the local agent is and may hold (its token's limits): the dev engine uses no GPU; room for a second local agent. */
const DEV_AGENT_LIMITS = { machineType: 'local-dev', maxGpus: 0, maxLeases: 4 };
/** How long an agent must stay up before start reports it as running. */
const AGENT_GRACE_MS = 3_000;

const port = Number(process.env.PORT ?? 8787);
const metricsPort = Number(process.env.AGENT_METRICS_PORT ?? 9464);
const persistTo = process.env.PERSIST_DIR ? path.resolve(process.env.INIT_CWD ?? process.cwd(), process.env.PERSIST_DIR) : undefined;
/** Where start keeps its own files: next to the default state, or inside PERSIST_DIR so runs with their own state never share them. */
const devDir = persistTo ?? path.join(ROOT, '.wrangler');
const credentialsFile = path.join(devDir, 'dev-credentials.json');
/** The Worker's local-only settings, where wrangler dev reads them (beside wrangler.toml). */
const DEV_VARS_FILE = path.join(ROOT, '.dev.vars');
const baseUrl = `http://127.0.0.1:${port}`;

const log = (msg: string) => process.stderr.write(`[start] ${msg}\n`);

/** Print the fleet's routine traffic too (agents' pulls, presence, claims, lease calls, idle sweeps). */
const fleetLogs = process.argv.includes('--fleet-logs') || process.env.FLEET_LOGS === '1';

/**
 * What a person watching `npm start` needs of the Worker's output: the requests to the
 * API, the console and the docs, errors, and whatever is not a request log; not the
 * fleet's own polling (an idle agent pulls every second), unless --fleet-logs; and not
 * wrangler's start-up chatter, which the banner replaces: its build lines, the table of
 * bindings (printed at each start and reload; wrangler.toml says the same), its local
 * server's progress and "Ready" line, and its warning that the cron is not run locally
 * (start fires it; the banner says so).
 */
function workerLineFilter(): (line: string) => boolean {
  let inBindingsTable = false;
  let inCronWarning = false;
  return (line) => {
    if (inBindingsTable) {
      // The table ends with its first empty line.
      inBindingsTable = line.trim() !== '';
      return false;
    }
    if (line.startsWith('Your Worker has access to the following bindings:')) {
      inBindingsTable = true;
      return false;
    }
    if (line.includes('Scheduled Workers are not automatically triggered during local development')) inCronWarning = true;
    if (inCronWarning) {
      // It ends with the link to the docs.
      inCronWarning = !line.includes('For more details, see');
      return false;
    }
    if (
      line.trim() === '' ||
      /^\[custom build\] /.test(line) ||
      /^Using secrets defined in /.test(line) ||
      /^⎔ (Starting local server|Connection status updated)/.test(line) ||
      /^\[wrangler:info\] Ready on /.test(line)
    )
      return false;
    if (fleetLogs) return true;
    const request = /^\[wrangler:\w+\] (\w+) (\S+) (\d{3})/.exec(line);
    if (request) {
      const [, , path, status] = request;
      if (Number(status) >= 500) return true;
      return /^\/(v1|console|docs|openapi\.json|openapi|downloads)(\/|\?|$)/.test(path);
    }
    // The cron sweep, when it found nothing to do.
    return !/"msg":"sweep","requeued":0,"renotified":0,"waiting":0/.test(line);
  };
}

interface Credentials {
  api_key: string;
  agent_token: string;
  /** The dev console user's password (the user is DEV_OWNER, an owner of the dev org and an operator). */
  console_password: string;
}

/** The dev credentials kept between runs (a key or token that turns out revoked is replaced in it: chooseCredentials). */
function savedCredentials(): Credentials {
  let saved: Partial<Credentials> = {};
  if (existsSync(credentialsFile)) {
    try {
      saved = JSON.parse(readFileSync(credentialsFile, 'utf8')) as Partial<Credentials>;
    } catch {
      log(`${credentialsFile} is not valid JSON: generating new dev credentials`);
    }
  }
  return {
    api_key: saved.api_key ?? randomToken('sk'),
    agent_token: saved.agent_token ?? randomToken('at'),
    console_password: saved.console_password ?? randomToken('dev', 8),
  };
}

function saveCredentials(creds: Credentials): void {
  mkdirSync(devDir, { recursive: true });
  writeFileSync(credentialsFile, JSON.stringify(creds, null, 2) + '\n', { mode: 0o600 });
}

/**
 * The dev API key and agent token to use: DEV_API_KEY if set, else the saved ones, so
 * that restarts print the same ones. A value stored already is used only while it is
 * live (and a key only while it is the dev organization's): a revoked one stays revoked,
 * and start says so and makes a new one, saved for the next run. Which values are new
 * (to import) is said too; an import of a value stored meanwhile is still refused by
 * its insert.
 */
async function chooseCredentials(
  saved: Credentials,
): Promise<{ creds: Credentials; importKey: boolean; importToken: boolean; newKeyWhy?: string }> {
  const keys = [process.env.DEV_API_KEY, saved.api_key].filter((k): k is string => !!k);
  const lookup = await storedCredentials({ apiKeys: keys, agentTokens: [saved.agent_token] });
  const [keyRows = [], tokenRows = []] = await d1Execute({ remote: false, persistTo }, lookup.sql);
  const stored = (rows: Row[], column: 'key_hash' | 'token_hash', value: string) =>
    rows.find((r) => r[column] === lookup.hashes.get(value));
  const creds = { ...saved };
  let importKey = true;
  const usableKey = keys.find((key) => {
    const row = stored(keyRows, 'key_hash', key);
    const which = key === process.env.DEV_API_KEY ? 'DEV_API_KEY' : `the dev API key ${key.slice(0, 11)}…`;
    if (!row) return true;
    if (row.revoked_at !== null) log(`${which} was revoked (${String(row.revoked_at)}): it stays revoked`);
    else if (row.org_id !== DEV_ORG_ID) log(`${which} is a key of ${String(row.org_id)}, not of ${DEV_ORG_ID}: not using it`);
    else importKey = false;
    return row.revoked_at === null && row.org_id === DEV_ORG_ID;
  });
  if (usableKey) creds.api_key = usableKey;
  else {
    creds.api_key = randomToken('sk');
    log(`made a new dev API key (printed below)`);
  }
  // Another key than the one asked for, or used last time: say so where the key is printed.
  const newKeyWhy = creds.api_key !== keys[0] ? 'new: the one before was revoked or not the dev organization’s' : undefined;
  const token = stored(tokenRows, 'token_hash', saved.agent_token);
  let importToken = !token;
  if (token && token.revoked_at !== null) {
    log(`the dev agent token was revoked (${String(token.revoked_at)}): it stays revoked; made a new one`);
    creds.agent_token = randomToken('at');
    importToken = true;
  }
  // DEV_API_KEY is the developer's to keep: only a key start made is saved.
  saveCredentials({ ...creds, api_key: usableKey === process.env.DEV_API_KEY ? saved.api_key : creds.api_key });
  return { creds, importKey, importToken, newKeyWhy };
}

async function seed({ creds, importKey, importToken }: Awaited<ReturnType<typeof chooseCredentials>>): Promise<void> {
  const appVmCommit = await devAppVmCommit(DEV_ENGINE_OPENVM_TOML);
  const steps = [
    createOrganization('Local development', DEV_ORG_ID),
    ...(importKey ? [await createApiKey(DEV_ORG_ID, DEV_OWNER, creds.api_key)] : []),
    createConfig({
      id: DEV_CONFIG_ID,
      ...TARGET_RELEASE,
      app_vm_commit: appVmCommit,
      engine: 'dev',
      deferral_enabled: true,
      openvm_toml: DEV_ENGINE_OPENVM_TOML,
    }),
    // A local database from before configs carried their openvm.toml keeps its row above.
    setConfigOpenvmToml(DEV_CONFIG_ID, DEV_ENGINE_OPENVM_TOML),
    // ...and one seeded with the old placeholder versions gets the release's.
    upgradeDevConfig(DEV_CONFIG_ID, { openvm_version: '1.4.0', app_vm_commit: OLD_DEV_APP_VM_COMMIT }, appVmCommit),
    // The local agent serves the dev engine, under the dev config only; a token made by an
    // older start (or a migrated one) gets the dev agent's limits.
    importToken
      ? await createAgentToken(DEV_AGENT_NAME, { engines: ['dev'], configs: [DEV_CONFIG_ID] }, DEV_AGENT_LIMITS, creds.agent_token)
      : await setAgentTokenLimits({ token: creds.agent_token }, DEV_AGENT_LIMITS),
    // The console's dev user: owner of the dev organization and an operator (the fleet page).
    await createUser({
      email: DEV_OWNER,
      orgId: DEV_ORG_ID,
      role: 'owner',
      name: 'Local developer',
      operator: true,
      consoleUrl: baseUrl,
      passwordHash: await hashPassword(creds.console_password),
    }),
  ];
  await d1Execute(
    { remote: false, persistTo },
    steps.flatMap((s) => s.sql),
  );
}

function agentArgs(token: string): string[] {
  return [
    '--api-url',
    baseUrl,
    '--agent-token',
    token,
    '--engines',
    'dev',
    '--gpus',
    '0',
    '--machine-type',
    'local-dev',
    '--work-dir',
    path.join(devDir, 'agent-work'),
    '--metrics-port',
    String(metricsPort),
  ];
}

function banner(creds: Credentials, agent: ChildProcess, newKeyWhy?: string): string {
  const agentLine = hasExited(agent)
    ? `not running (it exited with code ${agent.exitCode ?? agent.signalCode}; see [agent] above). Jobs wait until an agent runs:\n                 npm run agent -- ${agentArgs(creds.agent_token).join(' ')}`
    : `running (dev engine, metrics on http://127.0.0.1:${metricsPort}/metrics)`;
  return [
    '',
    '──────────────────────────────────────────────────────────────────────',
    `  Proving service: ${baseUrl}`,
    `  API key:         ${creds.api_key}   (header Service-API-Key${newKeyWhy ? `; ${newKeyWhy}` : ''})`,
    `  Config id:       ${DEV_CONFIG_ID}   (engine dev, deferral enabled)`,
    `  Console:         ${baseUrl}/console   (sign in as ${DEV_OWNER} / ${creds.console_password})`,
    `  API docs:        ${baseUrl}/docs`,
    `  Mail (outbox):   ${baseUrl}/console/outbox   (invitations and password links are stored there, not sent; each also logs a [mail] line)`,
    `  Prover agent:    ${agentLine}`,
    `  Cron sweep:      fired every minute by npm start (wrangler dev runs no cron; the deployed Worker's runs every minute)`,
    '',
    '  Try it:',
    `    curl -H 'Service-API-Key: ${creds.api_key}' ${baseUrl}/v1/validate_api_key`,
    '',
    '  Ctrl-C stops everything.',
    '──────────────────────────────────────────────────────────────────────',
    '',
  ].join('\n');
}

let worker: ChildProcess | undefined;
let agent: ChildProcess | undefined;
let stopping: Promise<never> | undefined;

/** Stops the agent, then the Worker, and exits; the first caller's exit code wins. */
function shutdown(code: number): Promise<never> {
  stopping ??= (async () => {
    if (agent) await stopGroup(agent);
    if (worker) await stopGroup(worker);
    process.exit(code);
  })();
  return stopping;
}

function onSignal(signal: NodeJS.Signals): void {
  if (stopping) {
    log(`${signal} again: killing everything now`);
    process.exit(1);
  }
  log(`${signal}: stopping the agent, then the Worker`);
  void shutdown(0);
}

async function main(): Promise<void> {
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // A closed terminal hangs up its foreground group: npm, sh and this process. The Worker
  // and the agent run in groups of their own (so that Ctrl-C reaches only this process),
  // so they would outlive it and hold their ports: stop them as for Ctrl-C.
  process.on('SIGHUP', onSignal);
  // `npm start` runs this under `sh -c`, which does not pass a SIGTERM sent to npm on;
  // npm and sh then exit and leave this process to init. Treat that as a SIGTERM.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent && !stopping) {
      log('the parent process (npm) exited: stopping the agent, then the Worker');
      void shutdown(0);
    }
  }, 1_000).unref();
  // Once npm is gone our output pipes may be too: keep stopping the children in order.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});
  // If start itself dies, its children (in their own process groups) must not outlive it.
  process.on('exit', () => {
    if (agent) killGroupNow(agent);
    if (worker) killGroupNow(worker);
  });

  if (!Number.isInteger(port) || port <= 0) throw new Error(`PORT must be a port number, not ${process.env.PORT}`);
  if (!(await portIsFree(port))) throw new Error(`${portInUseMessage(port, 'the Worker')}, or set PORT`);
  if (metricsPort && !(await portIsFree(metricsPort)))
    throw new Error(`${portInUseMessage(metricsPort, "the agent's metrics")}, or set AGENT_METRICS_PORT`);

  log(`applying migrations to the local D1 (${persistTo ?? '.wrangler/state'})`);
  await applyLocalMigrations(persistTo);
  const chosen = await chooseCredentials(savedCredentials());
  const creds = chosen.creds;
  log(`seeding ${DEV_ORG_ID}, its API key, config ${DEV_CONFIG_ID} and an agent token`);
  await seed(chosen);

  const added = ensureDevVars(DEV_VARS_FILE);
  if (added.length) log(`wrote ${added.join(', ')} into .dev.vars (local-only settings: src/tools/dev-vars.ts)`);
  log(`starting the Worker (wrangler dev) on ${baseUrl}`);
  worker = await spawnWranglerDev({ port, persistTo, devVars: 'dotfile' });
  forwardOutput(worker, '[worker]', workerLineFilter());
  const workerExit = exited(worker);
  await waitForHealthy(`${baseUrl}/healthz`, worker);

  log('starting a prover-agent with the dev engine');
  agent = spawnGroup(process.execPath, [path.join(ROOT, 'prover-agent', 'bin', 'prover-agent.js'), 'run', ...agentArgs(creds.agent_token)]);
  forwardOutput(agent, '[agent]');
  const agentExit = exited(agent);
  void agentExit.then(() => {
    if (!stopping && !hasExited(worker!))
      log(`the prover-agent exited (code ${agent!.exitCode ?? agent!.signalCode}); the Worker keeps running`);
  });
  await Promise.race([agentExit, new Promise((r) => setTimeout(r, AGENT_GRACE_MS))]);
  // wrangler dev does not fire cron triggers; fire the sweep (docs/contributors.md "How jobs run") as the
  // deployed cron does, every minute.
  setInterval(() => void fetch(`${baseUrl}/cdn-cgi/local/scheduled`).catch(() => {}), 60_000).unref();

  process.stdout.write(banner(creds, agent, chosen.newKeyWhy));

  await workerExit;
  if (stopping) return;
  log(`the Worker (wrangler dev) exited with code ${worker.exitCode ?? worker.signalCode}: stopping`);
  await shutdown(worker.exitCode || 1);
}

main().catch(async (err: unknown) => {
  // A signal's shutdown makes the startup steps fail; that is not an error to report.
  if (stopping) return;
  if (err instanceof WranglerError) process.stderr.write(err.output.trim() + '\n');
  log(`error: ${err instanceof Error ? err.message : String(err)}`);
  await shutdown(1);
});
