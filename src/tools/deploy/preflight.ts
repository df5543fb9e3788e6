// What `npm run deploy` refuses before it changes anything (`npm run deploy:check` runs
// only this). Offline: the environment's configuration (configProblems). With what the
// account holds (src/tools/deploy/plan.ts inspects it): the secrets (secretPlan).
//
// Refused: placeholders; settings that exist for local development only (the queue
// emulation, loopback webhooks, the mail outbox, a local value of any secret, a secret in
// plain vars, a dev proof secret where no dev config needs one); what the Worker needs and
// the environment lacks (a var or binding of the top level, the cron, a public origin, a
// secret nobody can generate).
import { LOCAL_DEV_VARS, localDevVars } from '../dev-vars.ts';
import { database, type Environment, jobsQueue, PUBLIC_ORIGIN, SECRETS, type SecretName, textVar } from './environment.ts';

export interface Problem {
  /** What is wrong, naming the setting. */
  what: string;
  /** How to mend it. */
  fix: string;
}

/** Text an operator is meant to replace: wrangler.toml's REPLACE_WITH_… ids, `<…>` and `...`. */
const PLACEHOLDER = /REPLACE_WITH|<[^<>\s][^<>]*>|^\.\.\.$|\.\.\.\s*$/;

/** Every string in a value, with where it is. */
function* strings(value: unknown, at: string): Generator<[string, string]> {
  if (typeof value === 'string') yield [at, value];
  else if (Array.isArray(value)) for (const [i, v] of value.entries()) yield* strings(v, `${at}[${i}]`);
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) yield* strings(v, at ? `${at}.${k}` : k);
}

const LOCAL_ONLY_WHY: Partial<Record<keyof typeof LOCAL_DEV_VARS, string>> = {
  DEV_QUEUE_EMULATION: 'emulates the jobs queue inside the Worker: agents would never see Cloudflare’s queue',
  WEBHOOKS_ALLOW_LOOPBACK: 'lets webhooks reach loopback addresses',
};

const isLoopbackHost = (host: string) => /^(localhost|127(\.\d+){3}|\[::1\]|0\.0\.0\.0)$/i.test(host) || host.endsWith('.localhost');

/** The configuration's problems, offline. */
export function configProblems(e: Environment): Problem[] {
  const problems: Problem[] = [];
  const add = (what: string, fix: string) => problems.push({ what, fix });
  const where = `[env.${e.env}]`;
  if (!e.defined.includes(e.env)) {
    add(
      `wrangler.toml has no environment "${e.env}" (it has: ${e.defined.join(', ') || 'none'})`,
      'pass --env with one of them; the top level is local development only',
    );
    return problems;
  }
  const c = e.config;

  for (const [at, text] of strings(
    {
      name: c.name,
      vars: c.vars,
      d1_databases: c.d1_databases,
      r2_buckets: c.r2_buckets,
      queues: c.queues,
      routes: c.routes,
      route: c.route,
    },
    '',
  ))
    if (PLACEHOLDER.test(text))
      add(
        `${at} is a placeholder ("${text}")`,
        `replace it under ${where}, or remove it where wrangler can find the resource itself (a D1 database by its database_name)`,
      );
  const db = database(c);
  if (!db) add('no D1 database is bound as DB', `add [[env.${e.env}.d1_databases]] with binding = "DB"`);
  else if (db.database_id && /^0{8}-0{4}-0{4}-0{4}-0{12}$/.test(db.database_id))
    add(`d1_databases DB has the local database id ${db.database_id}`, 'remove database_id: wrangler finds the database by database_name');

  // Local development's settings, and secrets written where anyone reading wrangler.toml sees them.
  const local = localDevVars();
  for (const [name, value] of Object.entries(c.vars)) {
    if (name in LOCAL_DEV_VARS) {
      const localName = name as keyof typeof LOCAL_DEV_VARS;
      if (name === 'MAIL_SENDER') {
        if (value === local.MAIL_SENDER)
          add(
            'MAIL_SENDER = "outbox" stores mail in D1 and never sends it (local development only)',
            'set MAIL_SENDER = "http" with MAIL_API_URL and MAIL_FROM, or leave it unset (nothing is emailed)',
          );
        continue;
      }
      const why = LOCAL_ONLY_WHY[localName];
      add(
        why ? `vars.${name} ${why} (local development only)` : `vars.${name} is a secret written in plain vars`,
        why ? `remove it from ${where} vars` : `remove it from ${where} vars: npm run deploy sets it as a Worker secret`,
      );
      continue;
    }
    if (name in SECRETS && SECRETS[name as SecretName].source !== 'looked up')
      add(
        `vars.${name} is a secret written in plain vars`,
        `remove it from ${where} vars and set it as a Worker secret (wrangler secret put ${name} --env ${e.env})`,
      );
    if (typeof value === 'string' && Object.values(local).includes(value) && !['true', 'outbox'].includes(value))
      add(`vars.${name} has a local development value`, 'give it a value of its own');
  }
  const sender = textVar(c, 'MAIL_SENDER');
  if (sender !== undefined && sender !== 'outbox') {
    if (sender !== 'http') add(`MAIL_SENDER = "${sender}" is not a sender`, 'set "http" (a mail API) or leave it unset');
    else
      for (const name of ['MAIL_API_URL', 'MAIL_FROM'])
        if (!textVar(c, name)) add(`MAIL_SENDER = "http" needs ${name}`, `set ${name} under [env.${e.env}.vars]`);
  }

  // What the local Worker has and this one lacks: vars and bindings are not inherited.
  for (const name of Object.keys(e.top.vars))
    if (!(name in c.vars))
      add(`vars.${name} is set at the top level but not here (vars are not inherited)`, `set it under [env.${e.env}.vars]`);
  const missing = (kind: string, top: string[], here: string[]) => {
    for (const name of top.filter((n) => !here.includes(n)))
      add(
        `${kind} ${name} is bound at the top level but not here (bindings are not inherited)`,
        `add it under ${where} with this environment's own resource`,
      );
  };
  missing(
    'D1 database',
    e.top.d1_databases.map((d) => d.binding),
    c.d1_databases.map((d) => d.binding),
  );
  missing(
    'R2 bucket',
    e.top.r2_buckets.map((b) => b.binding),
    c.r2_buckets.map((b) => b.binding),
  );
  missing(
    'queue producer',
    (e.top.queues.producers ?? []).map((p) => p.binding),
    (c.queues.producers ?? []).map((p) => p.binding),
  );
  missing(
    'rate limit',
    (e.top.ratelimits ?? []).map((r) => r.name),
    (c.ratelimits ?? []).map((r) => r.name),
  );
  const jobs = jobsQueue(c);
  if (jobs && (c.queues.consumers ?? []).some((q) => q.queue === jobs))
    add(
      `the jobs queue ${jobs} has a Worker consumer here`,
      'remove it: agents take jobs through its HTTP pull consumer, which npm run deploy adds',
    );
  if (!c.triggers.crons?.length)
    add(
      'no cron trigger: the sweep (lease checks, retention, webhooks overdue) never runs',
      `set triggers = { crons = ["* * * * *"] } under ${where}`,
    );

  // Where people open the console: every link the service mails points there.
  const origin = textVar(c, PUBLIC_ORIGIN);
  if (!origin)
    add(
      `${PUBLIC_ORIGIN} is not set: mailed links (invitations, password resets) would have no origin`,
      `set ${PUBLIC_ORIGIN} = "https://<your console's host>" under [env.${e.env}.vars]: a custom domain (routes, docs/deploy.md) or https://${c.name}.<your-subdomain>.workers.dev`,
    );
  else if (!PLACEHOLDER.test(origin)) {
    let url: URL | undefined;
    try {
      url = new URL(origin);
    } catch {
      url = undefined;
    }
    if (!url || url.protocol !== 'https:' || url.pathname !== '/' || url.search || url.hash || url.username)
      add(`${PUBLIC_ORIGIN} = "${origin}" is not an https origin`, 'set it to https://host[:port], nothing after the host');
    else if (isLoopbackHost(url.hostname))
      add(`${PUBLIC_ORIGIN} = "${origin}" is a loopback address`, 'set the address people open the console at');
  }
  if (c.workers_dev === false && !c.routes?.length && !c.route)
    add(
      'workers_dev = false and no routes: the Worker would answer nowhere',
      `add routes under ${where} (docs/deploy.md) or remove workers_dev = false`,
    );
  return problems;
}

/** What the account holds that the secrets depend on (src/tools/deploy/plan.ts inspects it). */
export interface SecretFacts {
  /** The Worker's secrets (names); empty for a Worker not deployed yet. */
  present: Set<string>;
  /** Active dev configs in the environment's database (0 when it has none yet). */
  devConfigs: number;
  /** The operator's environment, where secrets nobody can generate come from. */
  operatorEnv: NodeJS.ProcessEnv;
}

export interface SecretPlan {
  /** Secrets to set with the deploy, and where each value comes from. */
  set: { name: SecretName; source: 'generated' | 'your environment' | 'looked up' }[];
  problems: Problem[];
}

/** Which secrets the deploy sets (only missing ones, but for the looked-up queue ids), and what it refuses. */
export function secretPlan(e: Environment, facts: SecretFacts): SecretPlan {
  const c = e.config;
  const set: SecretPlan['set'] = [];
  const problems: Problem[] = [];
  const needed = new Set<SecretName>();
  for (const name of c.secrets?.required ?? []) {
    if (!(name in SECRETS))
      problems.push({ what: `secrets.required names ${name}, which the Worker does not read`, fix: 'remove it from secrets.required' });
    else needed.add(name as SecretName);
  }
  if (textVar(c, 'MAIL_SENDER') === 'http') needed.add('MAIL_API_KEY');
  if (textVar(c, 'R2_S3_ENDPOINT')) (['R2_S3_ACCESS_KEY_ID', 'R2_S3_SECRET_ACCESS_KEY'] as const).forEach((n) => needed.add(n));
  if (facts.devConfigs > 0) needed.add('DEV_PROOF_SECRET');
  else if (facts.present.has('DEV_PROOF_SECRET'))
    problems.push({
      what: 'DEV_PROOF_SECRET is set but the environment has no dev config (dev proofs are for local development)',
      fix: `delete it: npx wrangler secret delete DEV_PROOF_SECRET --env ${e.env}`,
    });
  for (const name of ['DEV_QUEUE_EMULATION', 'WEBHOOKS_ALLOW_LOOPBACK'])
    if (facts.present.has(name))
      problems.push({
        what: `the Worker has a secret ${name} (local development only)`,
        fix: `delete it: npx wrangler secret delete ${name} --env ${e.env}`,
      });

  for (const name of needed) {
    if (facts.present.has(name)) continue;
    const source = SECRETS[name].source;
    if (source === 'generated') set.push({ name, source: 'generated' });
    else if (source === 'operator') {
      const given = facts.operatorEnv[name];
      if (!given)
        problems.push({
          what: `the Worker has no ${name} (${SECRETS[name].why})`,
          fix: `run the deploy with ${name}=… in your environment`,
        });
      else if (Object.values(localDevVars()).includes(given))
        problems.push({ what: `${name} in your environment is a local development value`, fix: 'give it the real one' });
      set.push({ name, source: 'your environment' });
    }
  }
  // The queue the Worker pulls: its ids, looked up on every deploy (a re-created queue has a new id) unless they are vars.
  for (const name of ['QUEUES_ACCOUNT_ID', 'JOBS_QUEUE_ID'] as const) if (!textVar(c, name)) set.push({ name, source: 'looked up' });
  return { set, problems };
}
