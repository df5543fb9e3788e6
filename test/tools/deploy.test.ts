// `npm run deploy` without Cloudflare: the preflight over wrangler.toml variants (the
// repository's own, and fixtures that add what an operator might: a placeholder, a local
// setting, a secret in vars, no public origin), and the deploy itself over a recorder that
// stands in for the wrangler CLI (the one seam: src/tools/deploy/runner.ts) and answers as
// an account does, remembering what was created, so that a second deploy can be seen to
// create nothing. The production dry run itself runs in test/e2e/deploy-dry-run.test.ts.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runDeployment, type DeployOptions } from '../../src/tools/deploy/deployment.ts';
import { readEnvironment, type Environment } from '../../src/tools/deploy/environment.ts';
import { configProblems, secretPlan } from '../../src/tools/deploy/preflight.ts';
import { planRunner, type Runner, type WranglerCall } from '../../src/tools/deploy/runner.ts';
import { ROOT, type WranglerRun } from '../../src/tools/wrangler.ts';

const REPO_TOML = readFileSync(path.join(ROOT, 'wrangler.toml'), 'utf8');
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** The repository's wrangler.toml, edited, in a directory of its own. */
function fixture(edit: (toml: string) => string = (t) => t): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'zk-deploy-'));
  dirs.push(dir);
  const file = path.join(dir, 'wrangler.toml');
  writeFileSync(file, edit(REPO_TOML));
  return file;
}

/** Lines added at the top of [env.production.vars]. */
const productionVars =
  (...lines: string[]) =>
  (toml: string) => {
    expect(toml).toContain('[env.production.vars]\n');
    return toml.replace('[env.production.vars]\n', `[env.production.vars]\n${lines.join('\n')}\n`);
  };
const ORIGIN = 'PUBLIC_ORIGIN = "https://prover.example.com"';
/** A production configuration the preflight accepts: the repository's, with its public origin. */
const ready = () => fixture(productionVars(ORIGIN));

const problemsOf = async (file: string, env = 'production') => configProblems(await readEnvironment(env, file)).map((p) => p.what);

describe('the preflight over the configuration', () => {
  it("finds only the public origin missing in the repository's production config, and nothing once it is set", async () => {
    expect(await problemsOf(path.join(ROOT, 'wrangler.toml'))).toEqual([
      'PUBLIC_ORIGIN is not set: mailed links (invitations, password resets) would have no origin',
    ]);
    expect(await problemsOf(path.join(ROOT, 'wrangler.toml'), 'staging')).toHaveLength(1);
    expect(await problemsOf(ready())).toEqual([]);
  });

  it('refuses placeholders', async () => {
    const file = fixture((t) =>
      productionVars(ORIGIN)(t).replace(
        'database_name = "zk-proving-production"\n',
        'database_name = "zk-proving-production"\ndatabase_id = "REPLACE_WITH_PRODUCTION_D1_ID"\n',
      ),
    );
    expect(await problemsOf(file)).toEqual(['d1_databases[0].database_id is a placeholder ("REPLACE_WITH_PRODUCTION_D1_ID")']);
    expect(
      await problemsOf(fixture(productionVars('PUBLIC_ORIGIN = "https://zk-proving-production.<your-subdomain>.workers.dev"'))),
    ).toEqual(['vars.PUBLIC_ORIGIN is a placeholder ("https://zk-proving-production.<your-subdomain>.workers.dev")']);
    expect(await problemsOf(fixture(productionVars(ORIGIN, 'JOBS_QUEUE_ID = "..."')))).toEqual([
      'vars.JOBS_QUEUE_ID is a placeholder ("...")',
    ]);
  });

  it('refuses the settings of local development, and secrets in plain vars', async () => {
    const file = fixture(
      productionVars(
        ORIGIN,
        'WEBHOOKS_ALLOW_LOOPBACK = "true"',
        'DEV_QUEUE_EMULATION = "true"',
        'MAIL_SENDER = "outbox"',
        'DEV_PROOF_SECRET = "local-dev-proof-secret"',
        'MAIL_API_KEY = "re_123"',
        'SOME_KEY = "local-dev-console-jwt-secret-not-for-deployment"',
      ),
    );
    expect(await problemsOf(file)).toEqual([
      'vars.WEBHOOKS_ALLOW_LOOPBACK lets webhooks reach loopback addresses (local development only)',
      'vars.DEV_QUEUE_EMULATION emulates the jobs queue inside the Worker: agents would never see Cloudflare’s queue (local development only)',
      'MAIL_SENDER = "outbox" stores mail in D1 and never sends it (local development only)',
      'vars.DEV_PROOF_SECRET is a secret written in plain vars',
      'vars.MAIL_API_KEY is a secret written in plain vars',
      'vars.SOME_KEY has a local development value',
    ]);
  });

  it('refuses a public origin that is not a public https origin, and an incomplete mail sender', async () => {
    const origin = (value: string) => problemsOf(fixture(productionVars(`PUBLIC_ORIGIN = "${value}"`)));
    expect(await origin('http://127.0.0.1:8787')).toEqual(['PUBLIC_ORIGIN = "http://127.0.0.1:8787" is not an https origin']);
    expect(await origin('https://localhost')).toEqual(['PUBLIC_ORIGIN = "https://localhost" is a loopback address']);
    expect(await origin('https://prover.example.com/console')).toEqual([
      'PUBLIC_ORIGIN = "https://prover.example.com/console" is not an https origin',
    ]);
    expect(await problemsOf(fixture(productionVars(ORIGIN, 'MAIL_SENDER = "http"', 'MAIL_FROM = "proofs@example.com"')))).toEqual([
      'MAIL_SENDER = "http" needs MAIL_API_URL',
    ]);
  });

  it('refuses what the top level has and the environment lacks (vars and bindings are not inherited), and a missing cron', async () => {
    const file = fixture((t) =>
      productionVars(ORIGIN)(t)
        .replace(/(\[env\.production\.vars\][\s\S]*?)MAX_LEASE_SECONDS = "21600"\n/, '$1')
        .replace(/\[\[env\.production\.ratelimits\]\]\nname = "RATE_LIMIT_PASSWORD_RESET"\nnamespace_id = "3010"\nsimple = \{[^}]*\}\n/, '')
        .replace(
          'name = "zk-proving-production"\ntriggers = { crons = ["* * * * *"] }\n',
          'name = "zk-proving-production"\ntriggers = { crons = [] }\n',
        ),
    );
    expect(await problemsOf(file)).toEqual([
      'vars.MAX_LEASE_SECONDS is set at the top level but not here (vars are not inherited)',
      'rate limit RATE_LIMIT_PASSWORD_RESET is bound at the top level but not here (bindings are not inherited)',
      'no cron trigger: the sweep (lease checks, retention, webhooks overdue) never runs',
    ]);
  });

  it('refuses an environment wrangler.toml does not define', async () => {
    expect(await problemsOf(path.join(ROOT, 'wrangler.toml'), 'prod')).toEqual([
      'wrangler.toml has no environment "prod" (it has: staging, production)',
    ]);
  });
});

describe('the secrets a deploy sets', () => {
  const plan = async (present: string[], devConfigs = 0, operatorEnv: NodeJS.ProcessEnv = { QUEUES_API_TOKEN: 'cf-token' }) =>
    secretPlan(await readEnvironment('production', ready()), { present: new Set(present), devConfigs, operatorEnv });

  it('generates the missing random keys, takes the API token from the operator, and never replaces a secret that is set', async () => {
    const fresh = await plan([]);
    expect(fresh.problems).toEqual([]);
    expect(fresh.set).toEqual([
      { name: 'FLEET_TOKEN_SECRET', source: 'generated' },
      { name: 'CONSOLE_JWT_SECRET', source: 'generated' },
      { name: 'WEBHOOK_ENCRYPTION_KEY', source: 'generated' },
      { name: 'DOWNLOAD_URL_SECRET', source: 'generated' },
      { name: 'QUEUES_API_TOKEN', source: 'your environment' },
      { name: 'QUEUES_ACCOUNT_ID', source: 'looked up' },
      { name: 'JOBS_QUEUE_ID', source: 'looked up' },
    ]);
    const again = await plan(
      ['FLEET_TOKEN_SECRET', 'CONSOLE_JWT_SECRET', 'WEBHOOK_ENCRYPTION_KEY', 'DOWNLOAD_URL_SECRET', 'QUEUES_API_TOKEN'],
      0,
      {},
    );
    expect(again).toEqual({
      set: [
        { name: 'QUEUES_ACCOUNT_ID', source: 'looked up' },
        { name: 'JOBS_QUEUE_ID', source: 'looked up' },
      ],
      problems: [],
    });
  });

  it('refuses a missing API token and a dev proof secret with no dev config; makes one where dev configs exist', async () => {
    expect((await plan([], 0, {})).problems.map((p) => p.what)).toEqual([
      'the Worker has no QUEUES_API_TOKEN (a Cloudflare API token with Account › Queues › Edit: the Worker pulls the jobs queue for its agents)',
    ]);
    expect((await plan([], 0, { QUEUES_API_TOKEN: 'local-dev-download-secret' })).problems.map((p) => p.what)).toEqual([
      'QUEUES_API_TOKEN in your environment is a local development value',
    ]);
    expect((await plan(['DEV_PROOF_SECRET', 'WEBHOOKS_ALLOW_LOOPBACK'])).problems.map((p) => p.what)).toEqual([
      'DEV_PROOF_SECRET is set but the environment has no dev config (dev proofs are for local development)',
      'the Worker has a secret WEBHOOKS_ALLOW_LOOPBACK (local development only)',
    ]);
    expect((await plan([], 2)).set).toContainEqual({ name: 'DEV_PROOF_SECRET', source: 'generated' });
  });
});

/**
 * Stands in for the wrangler CLI as an account answers it: what exists (a D1 database,
 * queues with their ids and consumers, the Worker's secrets, active dev configs) changes
 * as the calls create it. Every call is recorded; the deploy's secrets file is read at
 * its call (it is deleted after).
 */
class RecordedAccount implements Runner {
  calls: WranglerCall[] = [];
  databases = new Set<string>();
  queues = new Map<string, { id: string; consumers: string[] }>();
  secrets = new Set<string>();
  devConfigs = 0;
  dryRunOutput = 'Total Upload: 1825.04 KiB\n--dry-run: exiting now.\n';
  uploaded: { values: Record<string, string>; mode: number }[] = [];
  said: string[] = [];

  say(text: string) {
    this.said.push(text);
  }

  async run(call: WranglerCall): Promise<WranglerRun> {
    this.calls.push(call);
    const a = call.args;
    const ok = (stdout = ''): WranglerRun => ({ code: 0, stdout, stderr: '' });
    const failed = (stderr: string): WranglerRun => ({ code: 1, stdout: '', stderr });
    const is = (...prefix: string[]) => prefix.every((p, i) => a[i] === p);
    if (is('deploy', '--dry-run')) return ok(this.dryRunOutput);
    if (is('whoami')) return ok(JSON.stringify({ loggedIn: true, accounts: [{ id: 'acct123', name: 'Acme' }] }));
    if (is('secret', 'list'))
      return this.secrets.size || this.uploaded.length
        ? ok(JSON.stringify([...this.secrets].map((name) => ({ name, type: 'secret_text' }))))
        : failed('Worker "zk-proving-production" (env: production) not found.');
    if (is('d1', 'list')) return ok(JSON.stringify([...this.databases].map((name) => ({ uuid: `uuid-${name}`, name }))));
    if (is('d1', 'execute')) return ok(JSON.stringify([{ results: [{ n: this.devConfigs }], success: true }]));
    if (is('d1', 'create')) return (this.databases.add(a[2]), ok(`Created ${a[2]}`));
    if (is('d1', 'migrations', 'apply')) return ok('Migrations applied');
    if (is('queues', 'info')) {
      const q = this.queues.get(a[2]);
      if (!q) return failed(`Queue "${a[2]}" does not exist. To create it, run: wrangler queues create ${a[2]}`);
      return ok(
        `Queue Name: ${a[2]}\nQueue ID: ${q.id}\nNumber of Consumers: ${q.consumers.length}\n${q.consumers.length ? `Consumers: ${q.consumers.join(',')}\n` : ''}`,
      );
    }
    if (is('queues', 'create')) return (this.queues.set(a[2], { id: `qid-${a[2]}`, consumers: [] }), ok());
    if (is('queues', 'consumer', 'http', 'add'))
      return (this.queues.get(a[4])!.consumers.push('HTTP Pull Consumer.\nPull messages using: …'), ok());
    if (is('deploy')) {
      const at = a.indexOf('--secrets-file');
      if (at >= 0) {
        const file = a[at + 1];
        const values = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
        this.uploaded.push({ values, mode: statSync(file).mode & 0o777 });
        Object.keys(values).forEach((k) => this.secrets.add(k));
      }
      return ok(
        'Uploaded zk-proving-production\nDeployed zk-proving-production triggers\n  https://zk-proving-production.acme.workers.dev\n  schedule: * * * * *\n',
      );
    }
    throw new Error(`the recorder does not know: wrangler ${a.join(' ')}`);
  }

  commands = () => this.calls.map((c) => c.args.filter((x) => !x.startsWith('/') && !x.includes('wrangler.toml')).join(' '));
  changes = () => this.calls.filter((c) => c.changes).map((c) => c.args.slice(0, 3).join(' '));
}

describe('npm run deploy, over a recorded wrangler', () => {
  const deploy = async (account: RecordedAccount, environment: Environment, extra: Partial<DeployOptions> = {}) => {
    const lines: string[] = [];
    const outcome = await runDeployment({
      environment,
      runner: account,
      mode: 'deploy',
      operatorEnv: { QUEUES_API_TOKEN: 'cf-queues-token' },
      out: (t) => lines.push(t),
      ...extra,
    });
    return { outcome, text: lines.join('\n') };
  };

  it('provisions what is missing, applies the migrations and deploys with the secrets it lacks; a second deploy creates nothing', async () => {
    const env = await readEnvironment('production', ready());
    const account = new RecordedAccount();
    const first = await deploy(account, env);
    expect(first.outcome).toEqual({ ok: true, problems: [], urls: ['https://zk-proving-production.acme.workers.dev'] });
    expect(account.commands()).toEqual([
      'deploy --dry-run --env production --config',
      'whoami --json --config',
      'secret list --env production --format json --config',
      'd1 list --json --config',
      'queues info zk-proving-jobs-production --env production --config',
      'queues info zk-proving-jobs-production-dlq --env production --config',
      'd1 create zk-proving-production --env production --config',
      'queues create zk-proving-jobs-production-dlq --env production --config',
      'queues create zk-proving-jobs-production --env production --config',
      'queues info zk-proving-jobs-production --env production --config',
      'queues consumer http add zk-proving-jobs-production --env production --message-retries 5 --dead-letter-queue zk-proving-jobs-production-dlq --visibility-timeout-secs 60 --config',
      'd1 migrations apply DB --env production --remote --config',
      'deploy --env production --secrets-file --config',
    ]);
    // Every command named the configuration it was given.
    expect(account.calls.every((c) => c.args.at(-1) === env.configPath)).toBe(true);
    const [upload] = account.uploaded;
    expect(upload.mode).toBe(0o600);
    expect(Object.keys(upload.values)).toEqual([
      'FLEET_TOKEN_SECRET',
      'CONSOLE_JWT_SECRET',
      'WEBHOOK_ENCRYPTION_KEY',
      'DOWNLOAD_URL_SECRET',
      'QUEUES_API_TOKEN',
      'QUEUES_ACCOUNT_ID',
      'JOBS_QUEUE_ID',
    ]);
    for (const name of ['FLEET_TOKEN_SECRET', 'CONSOLE_JWT_SECRET', 'WEBHOOK_ENCRYPTION_KEY', 'DOWNLOAD_URL_SECRET'])
      expect(upload.values[name]).toMatch(/^[A-Za-z0-9_-]{64}$/);
    expect(new Set(Object.values(upload.values)).size).toBe(7);
    expect(upload.values).toMatchObject({
      QUEUES_API_TOKEN: 'cf-queues-token',
      QUEUES_ACCOUNT_ID: 'acct123',
      JOBS_QUEUE_ID: 'qid-zk-proving-jobs-production',
    });
    // The file is gone, and no secret value reached the report.
    const file = account.calls.at(-1)!.args[account.calls.at(-1)!.args.indexOf('--secrets-file') + 1];
    expect(existsSync(file)).toBe(false);
    for (const value of Object.values(upload.values)) expect(first.text).not.toContain(value);
    expect(first.text).toContain(
      'Deployed: https://zk-proving-production.acme.workers.dev; the console at https://prover.example.com/console',
    );
    expect(first.text).toMatch(/npm run admin -- create-org .* --remote --env production/);

    // Again: nothing created, no secret replaced; only the queue's ids are sent again.
    const second = await deploy(account, env, { operatorEnv: {} });
    expect(second.outcome.ok).toBe(true);
    expect(account.changes().slice(6)).toEqual(['d1 migrations apply', 'deploy --env production']);
    expect(account.uploaded[1].values).toEqual({ QUEUES_ACCOUNT_ID: 'acct123', JOBS_QUEUE_ID: 'qid-zk-proving-jobs-production' });
    expect(account.calls.some((c) => c.args[0] === 'd1' && c.args[1] === 'execute')).toBe(true);
  });

  it('refuses before changing anything: a local setting, a wrangler warning, a missing token, a dev proof secret with no dev config', async () => {
    const refusedWith = async (
      account: RecordedAccount,
      environment: Environment,
      operatorEnv: NodeJS.ProcessEnv = { QUEUES_API_TOKEN: 't0k3n' },
    ) => {
      const { outcome } = await deploy(account, environment, { operatorEnv });
      expect(outcome.ok).toBe(false);
      expect(account.calls.filter((c) => c.changes)).toEqual([]);
      return outcome.problems.map((p) => p.what);
    };
    expect(
      await refusedWith(
        new RecordedAccount(),
        await readEnvironment('production', fixture(productionVars(ORIGIN, 'WEBHOOKS_ALLOW_LOOPBACK = "true"'))),
      ),
    ).toEqual(['vars.WEBHOOKS_ALLOW_LOOPBACK lets webhooks reach loopback addresses (local development only)']);
    const warned = new RecordedAccount();
    warned.dryRunOutput = '▲ [WARNING] Processing wrangler.toml configuration:\n  - something of ours\n';
    expect(await refusedWith(warned, await readEnvironment('production', ready()))).toEqual([
      'wrangler warns: Processing wrangler.toml configuration:',
    ]);
    expect(await refusedWith(new RecordedAccount(), await readEnvironment('production', ready()), {})).toHaveLength(1);
    const devSecret = new RecordedAccount();
    devSecret.secrets.add('DEV_PROOF_SECRET');
    devSecret.databases.add('zk-proving-production');
    expect(await refusedWith(devSecret, await readEnvironment('production', ready()))).toEqual([
      'DEV_PROOF_SECRET is set but the environment has no dev config (dev proofs are for local development)',
    ]);
  });

  it('deploy:check stops before the first change and says what is wrong', async () => {
    const account = new RecordedAccount();
    const { outcome } = await deploy(account, await readEnvironment('production', ready()), { mode: 'check' });
    expect(outcome.ok).toBe(true);
    expect(account.calls.filter((c) => c.changes)).toEqual([]);
    const offline = new RecordedAccount();
    await deploy(offline, await readEnvironment('production', ready()), { mode: 'check', offline: true });
    expect(offline.commands()).toEqual(['deploy --dry-run --env production --config']);
  });

  it('--plan prints every step of a first deploy, problems included, and runs nothing', async () => {
    const lines: string[] = [];
    const outcome = await runDeployment({
      environment: await readEnvironment('production', path.join(ROOT, 'wrangler.toml')),
      runner: planRunner((t) => lines.push(t)),
      mode: 'plan',
      operatorEnv: {},
      out: (t) => lines.push(t),
    });
    const text = lines.join('\n');
    expect(outcome.urls).toEqual(['https://<worker>.<your-subdomain>.workers.dev']);
    const steps = [...text.matchAll(/^ *\d+\. (read|change) +npx wrangler (.*)$/gm)].map((m) => `${m[1]} ${m[2]}`);
    expect(steps).toEqual([
      'read deploy --dry-run --env production',
      'read whoami --json',
      'read secret list --env production --format json',
      'read d1 list --json',
      'read queues info zk-proving-jobs-production --env production',
      'read queues info zk-proving-jobs-production-dlq --env production',
      'change d1 create zk-proving-production --env production',
      'change queues create zk-proving-jobs-production-dlq --env production',
      'change queues create zk-proving-jobs-production --env production',
      'read queues info zk-proving-jobs-production --env production',
      'change queues consumer http add zk-proving-jobs-production --env production --message-retries 5 --dead-letter-queue zk-proving-jobs-production-dlq --visibility-timeout-secs 60',
      'change d1 migrations apply DB --env production --remote',
      "change deploy --env production --secrets-file '<a file of FLEET_TOKEN_SECRET, CONSOLE_JWT_SECRET, WEBHOOK_ENCRYPTION_KEY, DOWNLOAD_URL_SECRET, QUEUES_API_TOKEN, QUEUES_ACCOUNT_ID, JOBS_QUEUE_ID>'",
    ]);
    // What a deploy would refuse is in the plan, where it would stop.
    expect(text).toContain('✗ PUBLIC_ORIGIN is not set');
    expect(text).toContain('✗ the Worker has no QUEUES_API_TOKEN');
    expect(text).toMatch(/a deploy would stop here: 2 problems above/);
  });
});
