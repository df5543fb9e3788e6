// `npm run admin -- <command> --local|--remote [--env staging|production] [flags]`: the
// operator command. It runs the SQL of src/admin/statements.ts (the statements the
// Worker tests run too) through `wrangler d1 execute`, and uploads config keys with
// `wrangler r2 object put` (each to an object of its own, then recorded as the key's
// next version with its SHA-256: src/features/configs/keys.ts). Results go to stdout (the value a script captures on
// the last line), progress and errors to stderr. Exit codes: 0 done, 1 failed, 2 usage.
import { createReadStream, readFileSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { ulid } from 'ulid';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  type AdminStep,
  createApiKey,
  createAgentToken,
  createConfig,
  createPublisherToken,
  keyHistory,
  listConfigKeys,
  listPublisherTokens,
  publishConfigKey,
  revokePublisherToken,
  revokePublisherTokenById,
  createOrganization,
  createUser,
  findUser,
  outboxInsert,
  type UserStep,
  listAgents,
  listUsers,
  listAgentTokens,
  listApiKeys,
  listConfigs,
  listOrganizations,
  revokeAgentToken,
  revokeAgentTokenById,
  revokeApiKey,
  revokeApiKeyById,
  setConfigActive,
  setOrganizationLimits,
  setOrganizationBudget,
  setOrganizationRetention,
  setConfigOpenvmToml,
  importRefusal,
  setAgentTokenLimits,
  type AgentTokenLimits,
} from '../admin/statements.ts';
import { openvmConfigProblems, PUBLISHED_KEY_NAMES, type PublishedKeyName } from 'prover-agent/protocol';
import { DEFAULT_KEY_SCOPE, KEY_SCOPE_NAMES, ROLES } from '../auth/permissions.ts';
import { artifactKey } from '../lib/artifact-keys.ts';
import { MailError, mailSender, send } from '../features/accounts/mail.ts';
import { rateOf } from '../jobs/rates.ts';
import {
  artifactsBucket,
  d1Execute,
  describeTarget,
  machineRates,
  mailSettings,
  r2Put,
  type Row,
  type Target,
  WranglerError,
} from './wrangler.ts';

const ENVS = ['staging', 'production'];

class UsageError extends Error {}

type Values = Record<string, string | boolean | undefined>;

interface Context {
  target: Target;
  values: Values;
  positionals: string[];
}

interface Command {
  /** Everything after the command name in its synopsis. */
  synopsis: string;
  summary: string;
  /** Flags of this command (the location flags are common to all). */
  options?: Record<string, { type: 'string' | 'boolean' }>;
  /** Names of the positional arguments, all required. */
  positionals?: string[];
  run(c: Context): Promise<void>;
}

const str = { type: 'string' } as const;
const bool = { type: 'boolean' } as const;

function required(values: Values, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v.trim() === '') throw new UsageError(`--${name} is required`);
  return v;
}

/** Exactly one of two flags, e.g. --key or --id. */
function oneOf(values: Values, a: string, b: string): [string, string] {
  const given = [a, b].filter((n) => values[n] !== undefined);
  if (given.length !== 1) throw new UsageError(`give exactly one of --${a} and --${b}`);
  return [given[0], required(values, given[0])];
}

function readText(file: string): string {
  const stat = statSync(file, { throwIfNoEntry: false });
  if (!stat?.isFile()) throw new UsageError(`no such file: ${file}`);
  return readFileSync(file, 'utf8');
}

/** Resolves a path the operator typed against the directory they ran npm from. */
function userPath(p: string): string {
  return path.resolve(process.env.INIT_CWD ?? process.cwd(), p);
}

/**
 * Runs a step's SQL, then prints its output. When `ifNothingChanged` is given, a step
 * that changed no row (unknown id, already revoked...) is an error with that message.
 */
async function runStep(target: Target, step: AdminStep, ifNothingChanged?: string): Promise<void> {
  const results = await d1Execute(target, [...step.sql, 'SELECT changes() AS changes;']).catch((err: unknown) => {
    // An import of a value stored already, live or revoked: the insert refused it (nothing was written).
    const refusal = err instanceof WranglerError ? importRefusal(`${err.message}\n${err.output}`) : null;
    throw refusal ? new Error(refusal) : err;
  });
  const changes = Number(results.at(-1)?.[0]?.changes ?? 0);
  if (ifNothingChanged !== undefined && changes === 0) throw new Error(ifNothingChanged);
  for (const line of step.output) process.stdout.write(line + '\n');
}

/**
 * Runs a create-user step and delivers its set-password link, if it made one: by email
 * when the target environment has a mail sender (the local outbox: in the same SQL;
 * "http": through the mail API once the SQL ran), otherwise printed as the last line.
 * This command is the one place such a link is ever printed.
 */
async function runUserStep(target: Target, step: UserStep): Promise<void> {
  const mail = step.mail;
  if (!mail) return runStep(target, step);
  const settings = await mailSettings(target.env);
  const sender = mailSender(settings);
  const print = (why: string) => {
    process.stderr.write(`admin: ${why}: printing the set-password link (hand it to ${mail.to} yourself)\n`);
    for (const line of step.output) process.stdout.write(line + '\n');
  };
  if (sender === 'outbox') {
    if (target.remote) throw new Error('MAIL_SENDER = "outbox" is for local development: never set it in a deployed environment');
    await runStep(target, {
      sql: [...step.sql, outboxInsert(mail)],
      output: [
        `${step.output[0].replace(/; open this link.*$/, '')}; a set-password link was emailed to ${mail.to} (local outbox: /console/outbox)`,
        mail.to,
      ],
    });
    return;
  }
  await runStep(target, { ...step, output: [] });
  if (sender === 'http' && settings.MAIL_API_KEY) {
    try {
      await send(settings, mail);
      process.stdout.write(
        `${step.output[0].replace(/; open this link.*$/, '')}; a set-password link was emailed to ${mail.to}\n${mail.to}\n`,
      );
      return;
    } catch (err) {
      if (!(err instanceof MailError)) throw err;
      return print(`the mail API refused it (${err.message})`);
    }
  }
  print(
    sender === 'http'
      ? 'MAIL_SENDER is "http" but MAIL_API_KEY is not set in your environment'
      : 'no mail sender is configured for this environment',
  );
}

function printRows(rows: Row[], json: boolean): void {
  if (json) {
    process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
    return;
  }
  if (rows.length === 0) {
    process.stderr.write('(no rows)\n');
    return;
  }
  const columns = Object.keys(rows[0]);
  const cells = rows.map((r) => columns.map((c) => (r[c] === null || r[c] === undefined ? '-' : String(r[c]))));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i].length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]))
      .join('  ')
      .trimEnd() + '\n';
  process.stdout.write(line(columns));
  for (const row of cells) process.stdout.write(line(row));
}

async function list(c: Context, sql: string): Promise<void> {
  const [rows] = await d1Execute(c.target, [sql]);
  printRows(rows ?? [], c.values.json === true);
}

/** A flag's whole number (absent: undefined, or a usage error when `needed`). */
function wholeNumber(values: Values, name: string, needed = false): number | undefined {
  const v = values[name];
  if (v === undefined && !needed) return undefined;
  if (typeof v !== 'string' || !/^\d+$/.test(v.trim()))
    throw new UsageError(`--${name} must be a whole number${v === undefined ? '' : `, not ${String(v)}`}`);
  return Number(v);
}

/**
 * A machine type the target's Worker bills: named in its MACHINE_RATES, or priced by its
 * `*`. An agent token of any other type would claim nothing (src/features/fleet/claim.ts).
 */
async function requirePriced(target: Target, machineType: string): Promise<void> {
  const rate = rateOf(await machineRates(target.env), machineType);
  if (rate === null)
    throw new Error(
      `machine type ${machineType} has no rate in MACHINE_RATES of ${target.env ?? 'the local configuration'} (wrangler.toml), which has no "*": add it there first`,
    );
  process.stderr.write(`admin: machine type ${machineType} is billed ${rate} USD per GPU-hour (MACHINE_RATES)\n`);
}

/** `revoke-…`: by the secret's value or by its id; nothing active to revoke is an error. */
function revokeCommand(
  what: string,
  secretFlag: string,
  bySecret: (value: string) => Promise<AdminStep>,
  byId: (id: string) => AdminStep,
  listCommand: string,
): Command {
  return {
    synopsis: `--${secretFlag} VALUE | --id ID`,
    summary: `Revoke an ${what}, by its value or by its id (see ${listCommand}).`,
    options: { [secretFlag]: str, id: str },
    async run(c) {
      const [by, value] = oneOf(c.values, secretFlag, 'id');
      const step = by === 'id' ? byId(value) : await bySecret(value);
      await runStep(c.target, step, by === 'id' ? `no active ${what} ${value}` : `no active ${what} has that value`);
    },
  };
}

const commands: Record<string, Command> = {
  'create-org': {
    synopsis: '--name NAME',
    summary: 'Create an organization; prints its id on the last line.',
    options: { name: str },
    run: (c) => runStep(c.target, createOrganization(required(c.values, 'name'))),
  },
  'set-org-limits': {
    synopsis:
      'ORG_ID [--max-jobs N|default] [--max-gpus N|default] [--weight W] [--cycle-limit N|default] [--cost-limit N|default] [--deadline-seconds N|default]',
    summary:
      'Set an organization’s quotas (queued-or-running jobs; GPUs those jobs hold), its fair-share weight, and the defaults of its jobs’ limits (cycles, cost in micro-USD, deadline in seconds; a request’s own wins); `default` returns a quota to the Worker’s ORG_MAX_ACTIVE_JOBS / ORG_MAX_GPUS, and a job-limit default to none.',
    options: { 'max-jobs': str, 'max-gpus': str, weight: str, 'cycle-limit': str, 'cost-limit': str, 'deadline-seconds': str },
    positionals: ['ORG_ID'],
    async run(c) {
      const quota = (flag: string): number | null | undefined => {
        const v = c.values[flag];
        if (v === undefined) return undefined;
        if (v === 'default') return null;
        if (typeof v !== 'string' || !/^\d+$/.test(v))
          throw new UsageError(`--${flag} must be a whole number or 'default', not ${String(v)}`);
        return Number(v);
      };
      const weight = quota('weight');
      if (weight === null || weight === 0) throw new UsageError('--weight must be a whole number ≥ 1');
      let step: AdminStep;
      try {
        step = setOrganizationLimits(c.positionals[0], {
          maxActiveJobs: quota('max-jobs'),
          maxGpus: quota('max-gpus'),
          shareWeight: weight,
          defaultCycleLimit: quota('cycle-limit'),
          defaultCostLimit: quota('cost-limit'),
          defaultDeadlineSeconds: quota('deadline-seconds'),
        });
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      await runStep(c.target, step, `no organization ${c.positionals[0]} (see list-orgs)`);
    },
  },
  'set-budget': {
    synopsis: 'ORG_ID [--usd D|none] [--gpu-hours H|none]',
    summary:
      'Set an organization’s monthly budget (calendar month, UTC): spend in USD (stored in micro-USD, the unit of `cost`) and GPU-hours; `none` removes a limit. At 100 % new proofs and executions are refused (README "Budgets").',
    options: { usd: str, 'gpu-hours': str },
    positionals: ['ORG_ID'],
    async run(c) {
      const limit = (flag: string, scale: number): number | null | undefined => {
        const v = c.values[flag];
        if (v === undefined) return undefined;
        if (v === 'none') return null;
        if (typeof v !== 'string' || !/^\d+(\.\d+)?$/.test(v) || Number(v) <= 0)
          throw new UsageError(`--${flag} must be a positive number or 'none', not ${String(v)}`);
        return scale === 1 ? Number(v) : Math.round(Number(v) * scale);
      };
      let step: AdminStep;
      try {
        step = setOrganizationBudget(c.positionals[0], { monthlyCost: limit('usd', 1_000_000), monthlyGpuHours: limit('gpu-hours', 1) });
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      await runStep(c.target, step, `no organization ${c.positionals[0]} (see list-orgs)`);
    },
  },
  'set-retention': {
    synopsis: 'ORG_ID --days N|forever',
    summary:
      'Set how many days an organization keeps its finished proofs’ and executions’ files (inputs, logs, proofs); past it the cron sweep deletes them, the records staying as tombstones. `forever` keeps them for good.',
    options: { days: str },
    positionals: ['ORG_ID'],
    async run(c) {
      const v = required(c.values, 'days');
      if (v !== 'forever' && !/^\d+$/.test(v)) throw new UsageError(`--days must be a whole number or 'forever', not ${v}`);
      let step: AdminStep;
      try {
        step = setOrganizationRetention(c.positionals[0], v === 'forever' ? null : Number(v));
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      await runStep(c.target, step, `no organization ${c.positionals[0]} (see list-orgs)`);
    },
  },
  'create-api-key': {
    synopsis: `--org ORG_ID --owner LABEL [--scope ${KEY_SCOPE_NAMES.join('|')}] [--key VALUE]`,
    summary:
      'Create an API key for an organization; prints the key (shown only once) on the last line. --scope (default full: an owner’s rights; prove: submit, read, verify; read: reads only) bounds it, as no creator does. --key imports a given value.',
    options: { org: str, owner: str, key: str, scope: str },
    async run(c) {
      const org = required(c.values, 'org');
      const key = c.values.key === undefined ? undefined : required(c.values, 'key');
      if (key !== undefined && !/^\S{16,}$/.test(key)) throw new UsageError('--key must be at least 16 characters, without spaces');
      const scope = KEY_SCOPE_NAMES.find((s) => s === (c.values.scope ?? DEFAULT_KEY_SCOPE));
      if (!scope) throw new UsageError(`--scope must be ${KEY_SCOPE_NAMES.join(', ')}, not ${c.values.scope}`);
      await runStep(c.target, await createApiKey(org, required(c.values, 'owner'), key, scope), `no organization ${org} (see list-orgs)`);
    },
  },
  'revoke-api-key': revokeCommand('API key', 'key', revokeApiKey, revokeApiKeyById, 'list-api-keys'),
  'list-api-keys': {
    synopsis: '[--org ORG_ID] [--json]',
    summary: 'List API keys (ids, owners, revocation; never the keys).',
    options: { org: str },
    run: (c) => list(c, listApiKeys(c.values.org === undefined ? undefined : required(c.values, 'org'))),
  },
  'create-user': {
    synopsis: `--email EMAIL --org ORG_ID [--role ${ROLES.join('|')}] [--name NAME] [--operator] [--console-url URL]`,
    summary:
      'Make a console user a member of an organization (default role owner; a viewer only reads: the first owner is made this way; owners and admins invite the rest from the console). An existing account keeps its password and only gains the membership. A new account (or one with no password yet) gets a one-time set-password link: emailed when the environment has a mail sender (MAIL_SENDER; for "http", MAIL_API_KEY in your environment), otherwise printed on the last line. --operator shows them the fleet page. --console-url is where the console is served (default: the environment\'s PUBLIC_ORIGIN in wrangler.toml).',
    options: { email: str, org: str, role: str, name: str, operator: bool, 'console-url': str },
    async run(c) {
      const org = required(c.values, 'org');
      const role = ROLES.find((r) => r === (c.values.role ?? 'owner'));
      if (!role) throw new UsageError(`--role must be ${ROLES.join(', ')}, not ${c.values.role}`);
      // Where the link points: --console-url, else the environment's PUBLIC_ORIGIN (the Worker's own setting).
      const consoleUrl =
        c.values['console-url'] === undefined ? (await mailSettings(c.target.env)).PUBLIC_ORIGIN : required(c.values, 'console-url');
      if (!consoleUrl)
        throw new UsageError(
          `--console-url is needed: this environment sets no PUBLIC_ORIGIN (where people open the console; wrangler.toml [env.${c.target.env ?? '…'}.vars])`,
        );
      const email = required(c.values, 'email');
      const [orgs, found] = await d1Execute(c.target, [listOrganizations(), findUser(email)]);
      if (!orgs?.some((o) => o.id === org)) throw new Error(`no organization ${org} (see list-orgs)`);
      const existing = found?.[0] ? { has_password: Number(found[0].has_password) === 1 } : undefined;
      let step: UserStep;
      try {
        step = await createUser(
          {
            email,
            orgId: org,
            role,
            name: typeof c.values.name === 'string' ? c.values.name : undefined,
            operator: c.values.operator === true,
            consoleUrl,
          },
          undefined,
          existing,
        );
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      await runUserStep(c.target, step);
    },
  },
  'list-users': {
    synopsis: '[--org ORG_ID] [--json]',
    summary: 'List console users with their memberships (never their passwords).',
    options: { org: str },
    run: (c) => list(c, listUsers(c.values.org === undefined ? undefined : required(c.values, 'org'))),
  },
  'list-orgs': {
    synopsis: '[--json]',
    summary: 'List organizations with their active API keys, quotas (- = the default), fair-share weight and queued-or-running jobs.',
    run: (c) => list(c, listOrganizations()),
  },
  'create-config': {
    synopsis:
      '--openvm-version V --stark-backend-version V --app-vm-commit 0x<64 hex> --engine dev|openvm [--openvm-toml FILE] [--deferral] [--public-values-bytes 32] [--inactive] [--id cfg_<ULID>]',
    summary:
      'Create a proving configuration; prints its id on the last line. --openvm-toml is the config’s VM definition (required for openvm; agents key from it, callers download it). --id fixes the id (e.g. the same in staging and production).',
    options: {
      'openvm-toml': str,
      'openvm-version': str,
      'stark-backend-version': str,
      'app-vm-commit': str,
      engine: str,
      deferral: bool,
      'public-values-bytes': str,
      inactive: bool,
      id: str,
    },
    async run(c) {
      const engine = required(c.values, 'engine');
      if (engine !== 'dev' && engine !== 'openvm') throw new UsageError(`--engine must be dev or openvm, not ${engine}`);
      const pvbText = c.values['public-values-bytes'];
      const pvb = pvbText === undefined ? undefined : Number(pvbText);
      if (pvb !== undefined && !Number.isInteger(pvb)) throw new UsageError(`--public-values-bytes must be an integer, not ${pvbText}`);
      const tomlPath = c.values['openvm-toml'] === undefined ? undefined : userPath(required(c.values, 'openvm-toml'));
      if (engine === 'openvm' && tomlPath === undefined)
        throw new UsageError('--openvm-toml is required for openvm configs: agents make the keys from it');
      const openvmToml = tomlPath === undefined ? undefined : readText(tomlPath);
      if (engine === 'openvm') {
        const problems = openvmConfigProblems({
          openvm_version: required(c.values, 'openvm-version'),
          public_values_bytes: pvb ?? 32,
          openvm_toml: openvmToml,
        });
        if (problems.length) throw new UsageError(`cargo openvm cannot serve this config:\n  ${problems.join('\n  ')}`);
      }
      let step: AdminStep;
      try {
        step = createConfig({
          openvm_toml: openvmToml,
          id: c.values.id === undefined ? undefined : required(c.values, 'id'),
          openvm_version: required(c.values, 'openvm-version'),
          stark_backend_version: required(c.values, 'stark-backend-version'),
          app_vm_commit: required(c.values, 'app-vm-commit'),
          engine,
          deferral_enabled: c.values.deferral === true,
          public_values_bytes: pvb,
          active: c.values.inactive !== true,
        });
      } catch (err) {
        throw err instanceof UsageError ? err : new UsageError((err as Error).message);
      }
      await runStep(c.target, step, `config ${step.output.at(-1)} exists already`);
    },
  },
  'activate-config': {
    synopsis: 'CONFIG_ID',
    summary: 'Let new programs register against a config.',
    positionals: ['CONFIG_ID'],
    run: (c) => runStep(c.target, setConfigActive(c.positionals[0], true), `no config ${c.positionals[0]} (see list-configs)`),
  },
  'deactivate-config': {
    synopsis: 'CONFIG_ID',
    summary: 'Refuse new program registrations against a config (existing programs keep it).',
    positionals: ['CONFIG_ID'],
    run: (c) => runStep(c.target, setConfigActive(c.positionals[0], false), `no config ${c.positionals[0]} (see list-configs)`),
  },
  'list-configs': {
    synopsis: '[--json]',
    summary: 'List proving configurations.',
    run: (c) => list(c, listConfigs()),
  },
  'set-config-toml': {
    synopsis: 'CONFIG_ID FILE',
    summary:
      'Set (replace) a config’s openvm.toml, served at GET /v1/configs/CONFIG_ID/config; agents re-key with `prover-agent setup-config`.',
    positionals: ['CONFIG_ID', 'FILE'],
    async run(c) {
      const [configId, fileArg] = c.positionals as [string, string];
      const text = readText(userPath(fileArg));
      const [found] = await d1Execute(c.target, [listConfigs(configId)]);
      const row = found?.[0];
      if (!row) throw new Error(`no config ${configId} (see list-configs)`);
      if (row.engine === 'openvm') {
        const problems = openvmConfigProblems({
          openvm_version: String(row.openvm_version),
          public_values_bytes: Number(row.public_values_bytes),
          openvm_toml: text,
        });
        if (problems.length) throw new UsageError(`cargo openvm cannot key ${configId} with this openvm.toml:\n  ${problems.join('\n  ')}`);
      }
      let step: AdminStep;
      try {
        step = setConfigOpenvmToml(configId, text);
      } catch (err) {
        throw err instanceof UsageError ? err : new UsageError((err as Error).message);
      }
      await runStep(c.target, step, `no config ${configId} (see list-configs)`);
    },
  },
  'put-config-key': {
    synopsis: `CONFIG_ID ${PUBLISHED_KEY_NAMES.join('|')} FILE [--supersedes VERSION]`,
    summary:
      'Publish a key file of a config from this machine as its next version, with its SHA-256 (GPU hosts use `prover-agent setup-config --publish` with a publisher token); callers get it through GET /v1/configs/CONFIG_ID/pk|vk/... or /evm_verifier. A published key is replaced only with --supersedes its current version (see list-config-keys). Prints the R2 key on the last line.',
    positionals: ['CONFIG_ID', 'NAME', 'FILE'],
    options: { supersedes: str },
    async run(c) {
      const [configId, name, fileArg] = c.positionals as [string, string, string];
      if (!(PUBLISHED_KEY_NAMES as readonly string[]).includes(name))
        throw new UsageError(`NAME must be one of ${PUBLISHED_KEY_NAMES.join(', ')}: ${name}`);
      const supersedes = c.values.supersedes === undefined ? null : Number(c.values.supersedes);
      if (supersedes !== null && !(Number.isInteger(supersedes) && supersedes >= 1))
        throw new UsageError(`--supersedes takes a version number: ${String(c.values.supersedes)}`);
      const file = userPath(fileArg);
      const stat = statSync(file, { throwIfNoEntry: false });
      if (!stat?.isFile()) throw new UsageError(`no such file: ${file}`);
      const [found, versions] = await d1Execute(c.target, [listConfigs(configId), listConfigKeys(configId)]);
      if (!found?.length) throw new Error(`no config ${configId} (see list-configs)`);
      const id = found[0].id as string;
      const current = versions?.find((r) => r.name === name)?.version ?? null;
      if ((current === null ? null : Number(current)) !== supersedes) {
        throw new Error(
          current === null
            ? `${name} of ${id} is not published: drop --supersedes`
            : `${name} of ${id} is published (version ${String(current)}): replacing it takes --supersedes ${String(current)}`,
        );
      }
      const hash = createHash('sha256');
      await pipeline(createReadStream(file), hash);
      const sha256 = hash.digest('hex');
      const bucket = await artifactsBucket(c.target.env);
      const uploadId = ulid().toLowerCase();
      const key = artifactKey.configKeyUpload(id, name as PublishedKeyName, uploadId);
      process.stderr.write(`admin: uploading ${stat.size} bytes (sha256 ${sha256}) to ${bucket}/${key}\n`);
      await r2Put(c.target, bucket, key, file);
      await runStep(c.target, publishConfigKey({ configId: id, name, uploadId, r2Key: key, sha256, size: stat.size, supersedes }));
    },
  },
  'create-publisher-token': {
    synopsis: '--name NAME (--configs CFG_ID[,CFG_ID...] | --all-configs) [--ttl-days N]',
    summary:
      'Create the credential that publishes config keys (prover-agent setup-config --publish --publisher-token): scoped to the configs named, expiring after --ttl-days (default 7, at most 90). Agent tokens cannot publish. Prints the token (shown only once) on the last line.',
    options: { name: str, configs: str, 'all-configs': bool, 'ttl-days': str },
    async run(c) {
      const all = c.values['all-configs'] === true;
      if (all === (c.values.configs !== undefined)) throw new UsageError('give exactly one of --configs and --all-configs');
      const ttl = c.values['ttl-days'] === undefined ? undefined : Number(c.values['ttl-days']);
      let step: AdminStep;
      try {
        step = await createPublisherToken({
          name: required(c.values, 'name'),
          configIds: all ? null : required(c.values, 'configs').split(','),
          ttlDays: ttl,
        });
      } catch (err) {
        throw err instanceof UsageError ? err : new UsageError((err as Error).message);
      }
      await runStep(c.target, step);
    },
  },
  'revoke-publisher-token': revokeCommand(
    'publisher token',
    'token',
    revokePublisherToken,
    revokePublisherTokenById,
    'list-publisher-tokens',
  ),
  'list-publisher-tokens': {
    synopsis: '[--json]',
    summary: 'List publisher tokens (ids, names, configs, expiry, revocation; never the tokens).',
    run: (c) => list(c, listPublisherTokens()),
  },
  'list-config-keys': {
    synopsis: '[--config CONFIG_ID] [--json]',
    summary: 'List the published versions of config keys (digest, size, who published), newest first.',
    options: { config: str },
    run: (c) => list(c, listConfigKeys(c.values.config as string | undefined)),
  },
  'key-history': {
    synopsis: '[--config CONFIG_ID] [--json]',
    summary:
      'The audit of key publication: uploads started, published, superseded, refused (digest, size, conflict) and aborted, newest first (200 rows).',
    options: { config: str },
    run: (c) => list(c, keyHistory(c.values.config as string | undefined)),
  },
  'create-agent-token': {
    synopsis:
      '--name NAME --engines ENGINE[,ENGINE...] --configs CONFIG_ID[,CONFIG_ID...]|all --machine-type TYPE --max-gpus N [--max-leases N]',
    summary:
      'Create a token for prover-agents, for jobs of these engines under these configs (`all`: every config of the engines): its agents claim nothing else, whatever they declare. --machine-type is what its hosts are billed as (a type MACHINE_RATES prices); a host must declare it as it is. --max-gpus: the most GPUs its leases hold at once (0: GPU-less engines only); --max-leases: the most jobs it runs at once (default one per GPU, at least 1). A host declaring more is held to them. Prints the token (shown only once) on the last line.',
    options: { name: str, engines: str, configs: str, 'machine-type': str, 'max-gpus': str, 'max-leases': str },
    async run(c) {
      const csv = (name: string) =>
        required(c.values, name)
          .split(',')
          .map((v) => v.trim())
          .filter(Boolean);
      const configs = required(c.values, 'configs').trim() === 'all' ? null : csv('configs');
      const maxGpus = wholeNumber(c.values, 'max-gpus', true)!;
      const limits: AgentTokenLimits = {
        machineType: required(c.values, 'machine-type'),
        maxGpus,
        maxLeases: wholeNumber(c.values, 'max-leases') ?? Math.max(1, maxGpus),
      };
      let step: AdminStep;
      try {
        step = await createAgentToken(required(c.values, 'name'), { engines: csv('engines'), configs }, limits);
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      await requirePriced(c.target, limits.machineType);
      await runStep(c.target, step);
    },
  },
  'set-agent-token-limits': {
    synopsis: '--id TOKEN_ID | --token VALUE  [--machine-type TYPE] [--max-gpus N] [--max-leases N]',
    summary:
      'Set what a live agent token’s hosts are billed as and may hold (see create-agent-token); unnamed ones stay. New claims are held to them at once; running jobs finish (revoke the token to end them now).',
    options: { id: str, token: str, 'machine-type': str, 'max-gpus': str, 'max-leases': str },
    async run(c) {
      const [by, value] = oneOf(c.values, 'id', 'token');
      const machineType = c.values['machine-type'] === undefined ? undefined : required(c.values, 'machine-type');
      let step: AdminStep;
      try {
        step = await setAgentTokenLimits(by === 'id' ? { id: value } : { token: value }, {
          machineType,
          maxGpus: wholeNumber(c.values, 'max-gpus'),
          maxLeases: wholeNumber(c.values, 'max-leases'),
        });
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      if (machineType !== undefined) await requirePriced(c.target, machineType);
      await runStep(
        c.target,
        step,
        by === 'id' ? `no live agent token ${value} (see list-agent-tokens)` : 'no live agent token has that value',
      );
    },
  },
  'revoke-agent-token': revokeCommand('agent token', 'token', revokeAgentToken, revokeAgentTokenById, 'list-agent-tokens'),
  'list-agent-tokens': {
    synopsis: '[--json]',
    summary: 'List agent tokens (ids, names, scope, machine type, most GPUs and leases, revocation; never the tokens).',
    run: (c) => list(c, listAgentTokens()),
  },
  'list-agents': {
    synopsis: '[--json]',
    summary: 'List the agents that have asked for work, most recently seen first.',
    run: (c) => list(c, listAgents()),
  },
};

const LOCATION_HELP = `Where (one is required, so that nothing is written to the wrong database by accident):
  --local                 the local D1/R2 that \`wrangler dev\` and \`npm start\` use (.wrangler/state)
  --persist-to DIR        with --local: another local state directory
  --remote                the deployed D1/R2 of --env (needs Cloudflare credentials)
  --env staging|production  the wrangler.toml environment; required with --remote
Other flags:
  --json                  list commands: print the rows as JSON
  -h, --help              this help, or a command's with \`<command> --help\``;

function commandUsage(name: string, command: Command): string {
  return `npm run admin -- ${name} ${command.synopsis} --local|--remote [--env staging|production]`;
}

function usage(): string {
  const lines = Object.entries(commands).map(([name, c]) => `  ${name} ${c.synopsis}\n      ${c.summary}`);
  return `usage: npm run admin -- <command> [args] --local|--remote [--env staging|production] [--persist-to DIR]\n\nCommands:\n${lines.join('\n')}\n\n${LOCATION_HELP}\n`;
}

function parseTarget(values: Values): Target {
  const env = values.env === undefined ? undefined : String(values.env);
  if (env !== undefined && !ENVS.includes(env)) throw new UsageError(`--env must be one of ${ENVS.join(', ')}, not ${env}`);
  if (values.local && values.remote) throw new UsageError('give --local or --remote, not both');
  if (!values.local && !values.remote)
    throw new UsageError('say which database: --local (the one wrangler dev and npm start use) or --remote --env staging|production');
  if (values.remote && env === undefined)
    throw new UsageError('--remote needs --env staging|production (the top-level config is local only)');
  const persistTo = values['persist-to'];
  if (persistTo !== undefined && values.remote) throw new UsageError('--persist-to only applies to --local');
  return { remote: values.remote === true, env, persistTo: typeof persistTo === 'string' ? userPath(persistTo) : undefined };
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage());
    return name === undefined ? 2 : 0;
  }
  // The operator's word, looked up as a name of this table's own (never "constructor").
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
  try {
    if (!command) throw new UsageError(`unknown command '${name}' (see --help)`);
    const { values, positionals } = parseArgs({
      args: rest,
      options: {
        local: bool,
        remote: bool,
        env: str,
        'persist-to': str,
        json: bool,
        help: { type: 'boolean', short: 'h' },
        ...command.options,
      },
      allowPositionals: true,
      strict: true,
    });
    if (values.help) {
      process.stdout.write(`usage: ${commandUsage(name, command)}\n\n${command.summary}\n\n${LOCATION_HELP}\n`);
      return 0;
    }
    const expected = command.positionals ?? [];
    if (positionals.length !== expected.length)
      throw new UsageError(expected.length ? `expected ${expected.join(' ')}` : `unexpected argument ${positionals[0]}`);
    const target = parseTarget(values);
    process.stderr.write(`admin: ${name} on ${describeTarget(target)}\n`);
    await command.run({ target, values: values, positionals });
    return 0;
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(
        `admin: ${(err as Error).message}\nusage: ${command ? commandUsage(name, command) : 'npm run admin -- --help'}\n`,
      );
      return 2;
    }
    if (err instanceof WranglerError) process.stderr.write(err.output.trim() + '\n');
    process.stderr.write(`admin: error: ${(err as Error).message}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
