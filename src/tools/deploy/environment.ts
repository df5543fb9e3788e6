// A deployed environment of wrangler.toml (staging, production), as `npm run deploy`
// sees it: the resolved configuration wrangler deploys (unstable_readConfig: the
// environment's own settings over the inherited ones), beside the top level it is
// compared with (what the local Worker has that the deployed one must have too).
import path from 'node:path';
import type { Unstable_Config } from 'wrangler';
import { ROOT } from '../wrangler.ts';

/** What the Worker is told of each secret it may need, and where `npm run deploy` gets it. */
export const SECRETS = {
  FLEET_TOKEN_SECRET: { source: 'generated', why: 'signs the agents’ queue tokens' },
  CONSOLE_JWT_SECRET: { source: 'generated', why: 'signs console access tokens (a new one signs everyone out)' },
  WEBHOOK_ENCRYPTION_KEY: { source: 'generated', why: 'encrypts webhook signing secrets in D1 (set once: a new one loses them)' },
  DOWNLOAD_URL_SECRET: { source: 'generated', why: 'signs key download links' },
  DEV_PROOF_SECRET: { source: 'generated', why: 'seals dev proofs: only where dev configs exist' },
  QUEUES_API_TOKEN: {
    source: 'operator',
    why: 'a Cloudflare API token with Account › Queues › Edit: the Worker pulls the jobs queue for its agents',
  },
  MAIL_API_KEY: { source: 'operator', why: 'the mail API’s key (MAIL_SENDER = "http")' },
  R2_S3_ACCESS_KEY_ID: { source: 'operator', why: 'an R2 API token’s key id (presigned key downloads)' },
  R2_S3_SECRET_ACCESS_KEY: { source: 'operator', why: 'an R2 API token’s secret (presigned key downloads)' },
  QUEUES_ACCOUNT_ID: { source: 'looked up', why: 'the Cloudflare account of the jobs queue' },
  JOBS_QUEUE_ID: { source: 'looked up', why: 'the jobs queue’s id' },
} as const;

export type SecretName = keyof typeof SECRETS;

/** The var, among an environment's vars, that says where people open the console (every mailed link points there). */
export const PUBLIC_ORIGIN = 'PUBLIC_ORIGIN';

/** The jobs queue's HTTP pull consumer (what the Worker pulls for its agents) and its dead-letter queue. */
export const PULL_CONSUMER = { messageRetries: 5, visibilityTimeoutSecs: 60, deadLetterSuffix: '-dlq' } as const;

/** The parts of wrangler's resolved configuration (unstable_readConfig) the deploy reads. */
export type WorkerConfig = Pick<
  Unstable_Config,
  'name' | 'vars' | 'd1_databases' | 'r2_buckets' | 'queues' | 'ratelimits' | 'triggers' | 'secrets' | 'routes' | 'route' | 'workers_dev'
>;

export interface Environment {
  /** The environment's name in wrangler.toml. */
  env: string;
  /** The wrangler.toml it was read from. */
  configPath: string;
  /** The environments wrangler.toml defines. */
  defined: string[];
  config: WorkerConfig;
  /** The top level (local development), for what the environment must match. */
  top: WorkerConfig;
}

export async function readEnvironment(env: string, configPath = path.join(ROOT, 'wrangler.toml')): Promise<Environment> {
  const { unstable_readConfig, experimental_readRawConfig } = await import('wrangler');
  const raw = experimental_readRawConfig({ config: configPath }).rawConfig as { env?: Record<string, unknown> };
  const read = (e?: string): WorkerConfig => unstable_readConfig({ config: configPath, env: e }, { hideWarnings: true });
  const defined = Object.keys(raw.env ?? {});
  return { env, configPath, defined, config: defined.includes(env) ? read(env) : read(), top: read() };
}

/** The jobs queue: the queue of the JOBS producer binding. */
export function jobsQueue(config: WorkerConfig): string | undefined {
  return config.queues.producers?.find((p) => p.binding === 'JOBS')?.queue;
}

/** The D1 database bound as DB. */
export function database(config: WorkerConfig) {
  return config.d1_databases.find((d) => d.binding === 'DB');
}

/** A var's value when it is a non-empty string. */
export function textVar(config: WorkerConfig, name: string): string | undefined {
  const v = config.vars[name];
  return typeof v === 'string' && v.trim() !== '' ? v : undefined;
}
