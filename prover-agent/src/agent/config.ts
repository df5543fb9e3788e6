// The agent's configuration: flags, each with an environment variable fallback.
import { hostname, homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ENGINE_OPERATIONS, type EngineOptions } from '../engine/types.ts';
import { ENGINE_NAMES } from '../protocol.ts';
import type { Level } from './log.ts';

export interface AgentConfig {
  apiUrl: string;
  agentToken: string;
  name: string;
  machineType: string;
  /** GPU ordinals this agent may use. */
  gpus: number[];
  engines: string[];
  configs: string[];
  workDir: string;
  /** Bytes the artifact cache (under workDir) may hold; 0: off. */
  artifactCacheBytes: number;
  concurrency: number;
  /** Overrides the heartbeat interval the service suggests, when set. */
  heartbeatIntervalMs: number | null;
  shutdownGraceMs: number;
  killGraceMs: number;
  /** Seconds to wait after an empty pull: how soon an idle agent sees a new notice. */
  pollIntervalMs: number;
  visibilityTimeoutMs: number;
  metricsPort: number;
  metricsHost: string;
  logLevel: Level;
  engineOptions: EngineOptions;
  /** Per engine: the longest a job may hold this host, from its claim (--job-time-limit). */
  jobTimeLimitsMs: Record<string, number>;
}

/**
 * --job-time-limit's default: a dev job is done in seconds (10^10 instructions, its
 * default cycle limit, take a couple of minutes), so ten minutes is a guest that makes
 * each instruction cost the host milliseconds; an openvm job gets the most a lease can
 * be renewed for (the service's MAX_LEASE_SECONDS, 6 h), as its prove timeout does.
 */
const DEFAULT_JOB_TIME_LIMITS = 'dev=600,openvm=21600';

/** [flag, env var, default, help] — the one list behind parsing and --help. */
const FLAGS = [
  ['api-url', 'PROVER_API_URL', undefined, 'Base URL of the proving service (the Worker)'],
  ['agent-token', 'PROVER_AGENT_TOKEN', undefined, 'Agent token (npm run admin -- create-agent-token): the only secret the host needs'],
  ['name', 'PROVER_AGENT_NAME', hostname(), 'Name of this agent in the service’s records; agents sharing a host need their own'],
  ['machine-type', 'PROVER_MACHINE_TYPE', 'unknown', 'Machine type, recorded on proofs and used for cost'],
  ['gpus', 'PROVER_GPUS', '0', 'GPU count (ordinals 0..N-1) or a comma list of ordinals'],
  ['engines', 'PROVER_ENGINES', 'dev', `Engines served, comma separated (${ENGINE_NAMES.join(', ')})`],
  ['configs', 'PROVER_CONFIGS', '', 'Config ids served, comma separated; empty = all configs of the engines'],
  [
    'work-dir',
    'PROVER_WORK_DIR',
    join(homedir(), '.prover-agent', '<name>'),
    'Job work directories (emptied at start, but for the artifact cache); one agent at a time (locked)',
  ],
  [
    'artifact-cache',
    'PROVER_ARTIFACT_CACHE_MB',
    '4096',
    'MB of shared job inputs (program ELF, VMEXE, baseline) kept between jobs under the work dir; 0 disables',
  ],
  ['concurrency', 'PROVER_CONCURRENCY', '', 'Jobs run at once (default: one per GPU, at least 1; openvm jobs use one GPU each)'],
  ['heartbeat-interval', 'PROVER_HEARTBEAT_INTERVAL', '', 'Seconds between heartbeats (default: the service’s suggestion)'],
  ['shutdown-grace', 'PROVER_SHUTDOWN_GRACE', '300', 'Seconds running jobs may finish after SIGTERM before they are released'],
  ['kill-grace', 'PROVER_KILL_GRACE', '10', 'Seconds between SIGTERM and SIGKILL for an engine'],
  ['poll-interval', 'PROVER_POLL_INTERVAL', '1', 'Seconds to wait after an empty pull (a pull touches no database)'],
  ['visibility-timeout', 'PROVER_VISIBILITY_TIMEOUT', '60', 'Seconds a pulled message stays invisible to other agents'],
  ['metrics-port', 'PROVER_METRICS_PORT', '9464', '/healthz and /metrics port; 0 disables'],
  ['metrics-host', 'PROVER_METRICS_HOST', '127.0.0.1', 'Address the metrics server listens on'],
  ['log-level', 'PROVER_LOG_LEVEL', 'info', 'debug, info, warn or error'],
  ['configs-dir', 'PROVER_AGENT_CONFIGS_DIR', '', 'openvm: directory of per-config directories (prover-agent setup-config)'],
  ['cargo', 'PROVER_AGENT_CARGO', '', 'openvm: the cargo executable with the openvm subcommand'],
  ['timeouts', 'PROVER_ENGINE_TIMEOUTS', '', 'Per-operation limits in seconds, e.g. prove=21600,commit=1800 (engine defaults otherwise)'],
  [
    'job-time-limit',
    'PROVER_JOB_TIME_LIMIT',
    DEFAULT_JOB_TIME_LIMITS,
    'Seconds a job may hold this host from its claim (its deadline, if sooner): N for every engine, or engine=N pairs; past it the engine is killed and the job fails',
  ],
] as const;

/**
 * The work dir of an agent named `name` when none is given: one per name, so that agents
 * sharing a host (each with its own --name) never share one; two of the same name are
 * refused by the work dir's lock (./work-dir-lock.ts).
 */
export function defaultWorkDir(name: string, home = homedir()): string {
  const safe = name.replace(/[^\w.-]+/g, '_').replace(/^\.+$/, '_') || '_';
  return join(home, '.prover-agent', safe);
}

export function usage(): string {
  const lines = FLAGS.map(
    ([flag, env, def, help]) => `  --${flag.padEnd(20)} ${help}\n  ${''.padEnd(22)} env ${env}${def ? `, default ${def}` : ''}`,
  );
  return `usage: prover-agent [run] [flags]\n\n${lines.join('\n')}\n  --engine             same as --engines\n`;
}

export class ConfigError extends Error {}

function list(v: string): string[] {
  return v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function number(name: string, v: string, min: number): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < min) throw new ConfigError(`--${name} must be a number ≥ ${min} (got '${v}')`);
  return n;
}

function timeouts(v: string): NonNullable<EngineOptions['timeouts']> {
  const out: NonNullable<EngineOptions['timeouts']> = {};
  for (const item of list(v)) {
    const [op, seconds] = item.split('=').map((x) => x.trim());
    if (!(ENGINE_OPERATIONS as readonly string[]).includes(op) || seconds === undefined)
      throw new ConfigError(`--timeouts takes op=seconds pairs with op one of ${ENGINE_OPERATIONS.join(', ')} (got '${item}')`);
    out[op as (typeof ENGINE_OPERATIONS)[number]] = number('timeouts', seconds, 1);
  }
  return out;
}

/** --job-time-limit in ms per engine: the defaults, then `value` (N for every engine, or engine=N pairs). */
function jobTimeLimits(value: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const spec of [DEFAULT_JOB_TIME_LIMITS, value]) {
    if (/^\s*[0-9.]+\s*$/.test(spec)) {
      for (const e of ENGINE_NAMES) out[e] = number('job-time-limit', spec, 1) * 1000;
      continue;
    }
    for (const item of list(spec)) {
      const [engine, seconds] = item.split('=').map((x) => x.trim());
      if (!(ENGINE_NAMES as readonly string[]).includes(engine) || seconds === undefined)
        throw new ConfigError(
          `--job-time-limit takes seconds, or engine=seconds pairs with engine one of ${ENGINE_NAMES.join(', ')} (got '${item}')`,
        );
      out[engine] = number('job-time-limit', seconds, 1) * 1000;
    }
  }
  return out;
}

export function loadConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): AgentConfig {
  const options: Record<string, { type: 'string' }> = {
    ...Object.fromEntries(FLAGS.map(([flag]) => [flag, { type: 'string' as const }])),
    engine: { type: 'string' },
  };
  const { values } = parseArgs({
    args: argv,
    // `--engine X` reads naturally for a single engine; it is --engines by another name.
    options,
    strict: true,
  });
  if (values.engine !== undefined) values.engines ??= values.engine;
  const get = (flag: (typeof FLAGS)[number][0]): string => {
    const [, envName, def] = FLAGS.find((f) => f[0] === flag)!;
    return values[flag] ?? env[envName] ?? def ?? '';
  };
  const required = (flag: (typeof FLAGS)[number][0]) => {
    const v = get(flag);
    if (!v) throw new ConfigError(`--${flag} (or ${FLAGS.find((f) => f[0] === flag)![1]}) is required`);
    return v;
  };
  const gpuSpec = get('gpus');
  const gpus = gpuSpec.includes(',')
    ? list(gpuSpec).map((g) => number('gpus', g, 0))
    : Array.from({ length: number('gpus', gpuSpec, 0) }, (_, i) => i);
  const engines = list(get('engines'));
  for (const e of engines)
    if (!(ENGINE_NAMES as readonly string[]).includes(e))
      throw new ConfigError(`unknown engine '${e}' (known: ${ENGINE_NAMES.join(', ')})`);
  if (engines.length === 0) throw new ConfigError('--engines needs at least one engine');
  const level = get('log-level') as Level;
  if (!['debug', 'info', 'warn', 'error'].includes(level)) throw new ConfigError(`--log-level must be debug, info, warn or error`);
  const hb = get('heartbeat-interval');
  const name = get('name');
  return {
    apiUrl: required('api-url'),
    agentToken: required('agent-token'),
    name,
    machineType: get('machine-type'),
    gpus,
    engines,
    configs: list(get('configs')),
    workDir: resolve(values['work-dir'] ?? env.PROVER_WORK_DIR ?? defaultWorkDir(name)),
    artifactCacheBytes: Math.round(number('artifact-cache', get('artifact-cache'), 0) * 1024 * 1024),
    concurrency: get('concurrency') ? number('concurrency', get('concurrency'), 1) : Math.max(1, gpus.length),
    heartbeatIntervalMs: hb ? number('heartbeat-interval', hb, 0.1) * 1000 : null,
    shutdownGraceMs: number('shutdown-grace', get('shutdown-grace'), 0) * 1000,
    killGraceMs: number('kill-grace', get('kill-grace'), 0) * 1000,
    pollIntervalMs: number('poll-interval', get('poll-interval'), 0) * 1000,
    visibilityTimeoutMs: number('visibility-timeout', get('visibility-timeout'), 1) * 1000,
    metricsPort: number('metrics-port', get('metrics-port'), 0),
    metricsHost: get('metrics-host'),
    logLevel: level,
    engineOptions: {
      ...(get('configs-dir') ? { configsDir: resolve(get('configs-dir')) } : {}),
      ...(get('cargo') ? { cargoPath: get('cargo') } : {}),
      ...(get('timeouts') ? { timeouts: timeouts(get('timeouts')) } : {}),
    },
    jobTimeLimitsMs: jobTimeLimits(get('job-time-limit')),
  };
}
