// `npm run deploy -- --env staging|production [--plan]` and `npm run deploy:check -- --env …
// [--offline]`: one command from a configured wrangler.toml to a running service
// (src/tools/deploy/deployment.ts; docs/deploy.md). Exit 0: deployed, planned, or checked
// clean; 1: refused (the problems are listed) or a step failed; 2: usage.
import { parseArgs } from 'node:util';
import { readEnvironment } from './deploy/environment.ts';
import { type Mode, runDeployment } from './deploy/deployment.ts';
import { liveRunner, planRunner } from './deploy/runner.ts';

const usage = `usage: npm run deploy -- --env ENV [--plan]
       npm run deploy:check -- --env ENV [--offline]

  --env ENV    the wrangler.toml environment (staging, production)
  --plan       print every step a first deploy takes, and what it checks; change nothing, run nothing
  --check      (deploy:check) the preflight, wrangler's dry run, and what the account holds; change nothing
  --offline    with --check: the configuration and the dry run only (no Cloudflare)

A deploy runs the check first, then creates what is missing (the D1 database, the jobs
queue, its dead-letter queue and HTTP pull consumer), applies the migrations, and deploys
the Worker with the secrets it lacks: the random keys generated, QUEUES_API_TOKEN (and
MAIL_API_KEY with MAIL_SENDER = "http") from your environment. Wrangler must be logged in
(npx wrangler login, or CLOUDFLARE_API_TOKEN). Guide: docs/deploy.md.`;

async function main(): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        env: { type: 'string' },
        plan: { type: 'boolean' },
        check: { type: 'boolean' },
        offline: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (err) {
    process.stderr.write(`deploy: ${(err as Error).message}\n\n${usage}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(usage + '\n');
    return 0;
  }
  if (!values.env || (values.plan && values.check) || (values.offline && !values.check)) {
    process.stderr.write(
      `deploy: ${values.env ? '--plan and --check are two commands; --offline goes with --check' : 'say which environment: --env staging|production'}\n\n${usage}\n`,
    );
    return 2;
  }
  const mode: Mode = values.plan ? 'plan' : values.check ? 'check' : 'deploy';
  const out = (text: string) => process.stdout.write(text + '\n');
  if (mode === 'plan')
    out(
      `deploy plan for env ${values.env}: the steps a first deploy takes. --plan changes nothing and runs nothing;\na deploy runs each "change" only when the "read" before it finds the resource missing.`,
    );
  const outcome = await runDeployment({
    environment: await readEnvironment(values.env),
    runner: mode === 'plan' ? planRunner(out) : liveRunner(),
    mode,
    operatorEnv: process.env,
    offline: values.offline,
    out,
  });
  if (mode === 'check')
    out(
      outcome.ok
        ? `\ndeploy:check: env ${values.env} is ready to deploy`
        : `\ndeploy:check: ${outcome.problems.length} problem(s): nothing would be deployed`,
    );
  else if (mode === 'deploy' && !outcome.ok) out(`\ndeploy: refused (${outcome.problems.length} problem(s) above); nothing was changed`);
  return outcome.ok || mode === 'plan' ? 0 : 1;
}

main().then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    process.stderr.write(`deploy: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
