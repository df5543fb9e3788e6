// `npm run deploy -- --env E`, step by step: the preflight (src/tools/deploy/preflight.ts)
// and wrangler's dry run, then what the account holds, then each change only where
// something is missing, then the deploy itself. Run with the live runner it deploys; with
// --plan's it prints the same steps and changes nothing; `deploy:check` stops before the
// first change. Every wrangler command goes through the runner (src/tools/deploy/runner.ts).
//
// Provisioned here: the D1 database (the migrations need it before the deploy), the jobs
// queue, its dead-letter queue and its HTTP pull consumer (wrangler provisions no pull
// consumer, and the Worker needs the queue's id). Left to wrangler's own automatic
// provisioning at deploy (wrangler >= 4.45: a binding without an id is created by its
// name): the R2 bucket and the Worker's own queues. Secrets go up with the deploy
// (`wrangler deploy --secrets-file`, additive: a secret already set is never replaced).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { database, type Environment, jobsQueue, PUBLIC_ORIGIN, PULL_CONSUMER, SECRETS, textVar } from './environment.ts';
import { configProblems, type Problem, secretPlan } from './preflight.ts';
import { ROOT } from '../wrangler.ts';
import type { Runner } from './runner.ts';

export type Mode = 'deploy' | 'plan' | 'check';

export interface DeployOptions {
  environment: Environment;
  runner: Runner;
  mode: Mode;
  /** The operator's environment: CLOUDFLARE_ACCOUNT_ID, and the secrets nobody can generate. */
  operatorEnv: NodeJS.ProcessEnv;
  /** check only: skip what needs Cloudflare (the account's resources and secrets). */
  offline?: boolean;
  /** Where the deploy's report goes (headings, problems, the URL, the next step). */
  out: (text: string) => void;
}

export interface Outcome {
  ok: boolean;
  problems: Problem[];
  /** Where the deployed Worker answers (deploy; --plan shows a placeholder). */
  urls: string[];
}

/** The JSON document in wrangler's output (it may print other lines first). */
function json(text: string): unknown {
  const at = text.search(/[[{]/);
  if (at < 0) return undefined;
  try {
    return JSON.parse(text.slice(at));
  } catch {
    return undefined;
  }
}

const output = (r: { stdout: string; stderr: string }) => r.stdout + r.stderr;
const plain = (text: string) => text.replace(/\u001b\[[0-9;]*m/g, '');

interface QueueFacts {
  exists: boolean;
  id?: string;
  /** Its consumers as `wrangler queues info` lists them. */
  consumers: string;
}

async function queueInfo(runner: Runner, env: string, name: string, why: string): Promise<QueueFacts> {
  const run = await runner.run({ args: ['queues', 'info', name, '--env', env], why, changes: false });
  if (run.code !== 0) {
    if (/does not exist/.test(output(run))) return { exists: false, consumers: '' };
    throw new Error(`wrangler queues info ${name} failed: ${output(run).trim().split('\n').at(-1)}`);
  }
  return {
    exists: true,
    id: /^Queue ID:\s*(\S+)/m.exec(run.stdout)?.[1],
    consumers: /^Consumers:\s*(.*)$/m.exec(run.stdout)?.[1] ?? '',
  };
}

export async function runDeployment(o: DeployOptions): Promise<Outcome> {
  const { environment: e, mode, out } = o;
  // A wrangler.toml other than the repository's (a test's) is named on every command.
  const configArgs = e.configPath === path.join(ROOT, 'wrangler.toml') ? [] : ['--config', e.configPath];
  const runner: Runner = { say: (t) => o.runner.say(t), run: (call) => o.runner.run({ ...call, args: [...call.args, ...configArgs] }) };
  const env = e.env;
  const problems: Problem[] = [];
  const report = (found: Problem[]) => {
    for (const p of found) out(`  ✗ ${p.what}\n      ${p.fix}`);
    problems.push(...found);
  };
  /** After a phase: whether to go on. --plan always goes on (it shows every step). */
  const goOn = (phase: string): boolean => {
    if (problems.length === 0) {
      out(`  ✓ ${phase}`);
      return true;
    }
    if (mode === 'plan') {
      out(`  (a deploy would stop here: ${problems.length} problem${problems.length > 1 ? 's' : ''} above)`);
      return true;
    }
    return false;
  };
  const stop = (): Outcome => ({ ok: false, problems, urls: [] });

  out(`\nPreflight: env ${env} of ${path.relative(process.cwd(), e.configPath) || e.configPath} (offline)`);
  report(configProblems(e));
  if (!e.defined.includes(env)) return stop();
  const dry = await runner.run({
    args: ['deploy', '--dry-run', '--env', env],
    why: 'builds and bundles the Worker offline; wrangler checks the configuration (any warning stops the deploy)',
    changes: false,
  });
  const warnings = plain(output(dry))
    .split('\n')
    .filter((l) => /\[WARNING\]/.test(l));
  for (const w of warnings) report([{ what: `wrangler warns: ${w.replace(/^.*\[WARNING\]\s*/, '')}`, fix: 'see wrangler’s output above' }]);
  if (dry.code !== 0) report([{ what: `wrangler deploy --dry-run failed (exit code ${dry.code})`, fix: 'see wrangler’s output above' }]);
  if (!goOn('the configuration')) return stop();
  if (mode === 'check' && o.offline) {
    out('  (offline: the account’s resources and secrets were not checked)');
    return { ok: problems.length === 0, problems, urls: [] };
  }

  out(`\nWhat the account holds`);
  const whoami = await runner.run({
    args: ['whoami', '--json'],
    why: 'who you are, and the account the queue’s ids belong to',
    changes: false,
  });
  const accounts = ((json(whoami.stdout) as { accounts?: { id: string; name: string }[] } | undefined)?.accounts ?? []).filter((a) => a.id);
  let accountId = o.operatorEnv.CLOUDFLARE_ACCOUNT_ID;
  if (whoami.code !== 0) {
    report([{ what: 'wrangler is not logged in', fix: 'npx wrangler login, or set CLOUDFLARE_API_TOKEN (and CLOUDFLARE_ACCOUNT_ID)' }]);
    return stop();
  }
  if (!accountId && accounts.length === 1) accountId = accounts[0].id;
  if (!accountId)
    report([
      {
        what: `you can reach ${accounts.length} accounts (${accounts.map((a) => a.name).join(', ')})`,
        fix: 'set CLOUDFLARE_ACCOUNT_ID to the one to deploy to',
      },
    ]);

  const secretList = await runner.run({
    args: ['secret', 'list', '--env', env, '--format', 'json'],
    why: 'the secrets the Worker has (names only)',
    changes: false,
  });
  const present = new Set<string>();
  if (secretList.code === 0) for (const s of (json(secretList.stdout) as { name: string }[] | undefined) ?? []) present.add(s.name);
  else if (/not found/i.test(output(secretList))) runner.say('the Worker is not deployed yet: it has no secrets');
  else throw new Error(`wrangler secret list failed: ${output(secretList).trim().split('\n').at(-1)}`);

  const db = database(e.config)!;
  const dbName = db.database_name ?? '';
  const d1List = await runner.run({ args: ['d1', 'list', '--json'], why: `whether the D1 database ${dbName} exists`, changes: false });
  if (d1List.code !== 0) throw new Error(`wrangler d1 list failed: ${output(d1List).trim().split('\n').at(-1)}`);
  const dbExists = ((json(d1List.stdout) as { name: string }[] | undefined) ?? []).some((d) => d.name === dbName);
  let devConfigs = 0;
  if (dbExists) {
    const count = await runner.run({
      args: [
        'd1',
        'execute',
        'DB',
        '--remote',
        '--env',
        env,
        '--json',
        '--command',
        "SELECT count(*) AS n FROM configs WHERE engine = 'dev' AND active = 1",
      ],
      why: 'whether the environment has dev configs (they need DEV_PROOF_SECRET; without them it is refused)',
      changes: false,
    });
    const rows = json(count.stdout) as { results?: { n?: number }[] }[] | undefined;
    if (count.code === 0 && Array.isArray(rows)) devConfigs = Number(rows[0]?.results?.[0]?.n ?? 0);
    else if (!/no such table/.test(output(count)))
      throw new Error(`counting dev configs failed: ${output(count).trim().split('\n').at(-1)}`);
  } else runner.say(`the database ${dbName} does not exist yet: it has no dev config`);

  const jobs = jobsQueue(e.config)!;
  const dlq = jobs + PULL_CONSUMER.deadLetterSuffix;
  const jobsQueueNow = await queueInfo(runner, env, jobs, 'the jobs queue: whether it exists, its id, and its HTTP pull consumer');
  const dlqNow = await queueInfo(runner, env, dlq, 'the jobs queue’s dead-letter queue');
  const hasPullConsumer = /HTTP Pull Consumer/.test(jobsQueueNow.consumers);
  if (jobsQueueNow.exists && jobsQueueNow.consumers && !hasPullConsumer)
    report([
      {
        what: `the jobs queue ${jobs} has another consumer (${jobsQueueNow.consumers})`,
        fix: `remove it: npx wrangler queues consumer remove ${jobs} <worker>`,
      },
    ]);
  const queueIdVar = textVar(e.config, 'JOBS_QUEUE_ID');
  if (queueIdVar && jobsQueueNow.id && queueIdVar !== jobsQueueNow.id)
    report([
      {
        what: `JOBS_QUEUE_ID = "${queueIdVar}" is not the id of ${jobs} (${jobsQueueNow.id})`,
        fix: 'remove the var: npm run deploy sets it',
      },
    ]);

  const secrets = secretPlan(e, { present, devConfigs, operatorEnv: o.operatorEnv });
  report(secrets.problems);
  for (const s of secrets.set) runner.say(`secret ${s.name}: to set (${s.source}; ${SECRETS[s.name].why})`);
  for (const name of [...present].sort()) runner.say(`secret ${name}: set already, kept`);
  if (!goOn('the account and the secrets')) return stop();
  if (mode === 'check') return { ok: true, problems, urls: [] };

  out(`\nChanges${mode === 'plan' ? ' (--plan: none is made)' : ''}`);
  const change = async (args: string[], why: string) => {
    const run = await runner.run({ args, why, changes: true });
    if (run.code !== 0) throw new Error(`${args.slice(0, 3).join(' ')} failed (exit code ${run.code}): see wrangler’s output above`);
    return run;
  };
  if (!dbExists) await change(['d1', 'create', dbName, '--env', env], `the D1 database (bound as DB; wrangler finds it by name)`);
  else runner.say(`D1 database ${dbName}: exists`);
  if (!dlqNow.exists) await change(['queues', 'create', dlq, '--env', env], 'the dead-letter queue of job notices no agent could take');
  else runner.say(`queue ${dlq}: exists`);
  let queueId = jobsQueueNow.id;
  if (!jobsQueueNow.exists) {
    await change(['queues', 'create', jobs, '--env', env], 'the jobs queue (job notices for the agents)');
    queueId = (await queueInfo(runner, env, jobs, 'the new jobs queue’s id (JOBS_QUEUE_ID)')).id;
  } else runner.say(`queue ${jobs}: exists`);
  if (!hasPullConsumer)
    await change(
      [
        'queues',
        'consumer',
        'http',
        'add',
        jobs,
        '--env',
        env,
        '--message-retries',
        String(PULL_CONSUMER.messageRetries),
        '--dead-letter-queue',
        dlq,
        '--visibility-timeout-secs',
        String(PULL_CONSUMER.visibilityTimeoutSecs),
      ],
      'the HTTP pull consumer the Worker pulls for its agents',
    );
  else runner.say(`queue ${jobs}: has its HTTP pull consumer`);
  await change(['d1', 'migrations', 'apply', 'DB', '--env', env, '--remote'], 'the schema: migrations not applied yet (none on a re-run)');

  // The secrets go up with the deploy, in a file only this process can read, deleted after.
  const values: Record<string, string> = {};
  for (const s of secrets.set) {
    if (s.name === 'QUEUES_ACCOUNT_ID') values[s.name] = accountId ?? '';
    else if (s.name === 'JOBS_QUEUE_ID') values[s.name] = queueId ?? '';
    else if (s.source === 'generated') values[s.name] = randomBytes(48).toString('base64url');
    else values[s.name] = o.operatorEnv[s.name] ?? '';
  }
  const empty = Object.entries(values).filter(([, v]) => !v);
  if (empty.length && mode === 'deploy') throw new Error(`no value for ${empty.map(([k]) => k).join(', ')}`);
  const dir = mode === 'deploy' ? mkdtempSync(path.join(tmpdir(), 'zk-deploy-')) : undefined;
  const secretsFile = dir ? path.join(dir, 'secrets.json') : `<a file of ${secrets.set.map((s) => s.name).join(', ')}>`;
  let deployed;
  try {
    if (dir) writeFileSync(secretsFile, JSON.stringify(values), { mode: 0o600 });
    deployed = await change(
      ['deploy', '--env', env, ...(secrets.set.length ? ['--secrets-file', secretsFile] : [])],
      `the Worker and its cron${secrets.set.length ? ', with the secrets above' : ''}; wrangler creates the R2 bucket and the Worker's own queues if they are missing (automatic provisioning)`,
    );
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
  const urls = [
    ...new Set([
      ...[...deployed.stdout.matchAll(/^\s*(https:\/\/\S+)\s*$/gm)].map((m) => m[1]),
      ...[...deployed.stdout.matchAll(/^\s*(\S+) \(custom domain\)/gm)].map((m) => `https://${m[1]}`),
    ]),
  ];
  const origin = textVar(e.config, PUBLIC_ORIGIN) ?? '<PUBLIC_ORIGIN>';
  const remote = `--remote --env ${env}`;
  out(
    `\n${mode === 'plan' ? 'Then' : 'Deployed'}: ${urls.join(', ') || '(see wrangler’s output above)'}; the console at ${origin}/console`,
  );
  out(
    [
      '\nNext: the first organization, its owner (a console operator), a config and a GPU host (docs/deploy.md, "After the first deploy"):',
      `  npm run admin -- create-org --name "<your organization>" ${remote}`,
      `  npm run admin -- create-user --email <you@example.com> --org <org id> --operator --console-url ${origin} ${remote}`,
      `  npm run admin -- create-config --openvm-version 2.0.1 --stark-backend-version 2.0.1 --engine openvm --openvm-toml ./openvm.toml --app-vm-commit <0x… docs/deploy.md "The first config"> ${remote}`,
      `  npm run admin -- create-agent-token --name <host> --engines openvm --configs <config id> ${remote}    then docs/gpu-hosts.md`,
    ].join('\n'),
  );
  return { ok: true, problems, urls };
}
