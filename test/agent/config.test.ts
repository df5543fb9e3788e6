import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, usage } from '../../prover-agent/src/agent/config.ts';

const required = ['--api-url', 'http://svc', '--agent-token', 'at_x'];

describe('prover-agent configuration', () => {
  it('reads flags, falls back to the environment, then to defaults', () => {
    const cfg = loadConfig(['--api-url', 'http://flag'], {
      PROVER_API_URL: 'http://env',
      PROVER_AGENT_TOKEN: 'at_env',
      PROVER_GPUS: '4',
      PROVER_ENGINES: 'dev,openvm',
    });
    expect(cfg).toMatchObject({
      apiUrl: 'http://flag',
      agentToken: 'at_env',
      gpus: [0, 1, 2, 3],
      engines: ['dev', 'openvm'],
      configs: [],
      concurrency: 4, // one job per GPU unless told otherwise
      pollIntervalMs: 1000,
      shutdownGraceMs: 300_000,
      heartbeatIntervalMs: null,
    });
  });

  it('takes GPU ordinals as a list, --engine as --engines, and openvm engine options', () => {
    const cfg = loadConfig(
      [
        ...required,
        '--gpus',
        '2,5',
        '--engine',
        'openvm',
        '--configs',
        'cfg_a, cfg_b',
        '--configs-dir',
        '/srv/cfgs',
        '--cargo',
        '/opt/cargo',
        '--timeouts',
        'prove=7200, commit=600',
      ],
      {},
    );
    expect(cfg).toMatchObject({
      gpus: [2, 5],
      engines: ['openvm'],
      configs: ['cfg_a', 'cfg_b'],
      engineOptions: { configsDir: '/srv/cfgs', cargoPath: '/opt/cargo', timeouts: { prove: 7200, commit: 600 } },
    });
  });

  it('runs one job per GPU by default, at least one, and --concurrency overrides it', () => {
    expect(loadConfig([...required, '--gpus', '2,5'], {}).concurrency).toBe(2);
    expect(loadConfig([...required, '--gpus', '0'], {}).concurrency).toBe(1);
    expect(loadConfig([...required, '--gpus', '8', '--concurrency', '3'], {}).concurrency).toBe(3);
  });

  it('limits every job’s time on the host: documented defaults per engine, N for all, or engine=N pairs', () => {
    expect(loadConfig(required, {}).jobTimeLimitsMs).toEqual({ dev: 600_000, openvm: 21_600_000 });
    expect(loadConfig([...required, '--job-time-limit', '30'], {}).jobTimeLimitsMs).toEqual({ dev: 30_000, openvm: 30_000 });
    expect(loadConfig(required, { PROVER_JOB_TIME_LIMIT: 'dev=5' }).jobTimeLimitsMs).toEqual({ dev: 5_000, openvm: 21_600_000 });
    expect(usage()).toMatch(/--job-time-limit[\s\S]*env PROVER_JOB_TIME_LIMIT, default dev=600,openvm=21600/);
    expect(() => loadConfig([...required, '--job-time-limit', 'gpu=3'], {})).toThrow(/--job-time-limit takes seconds, or engine=seconds/);
    expect(() => loadConfig([...required, '--job-time-limit', '0'], {})).toThrow(/--job-time-limit must be a number ≥ 1/);
  });

  it('refuses missing credentials, unknown engines and bad numbers, naming the flag', () => {
    expect(() => loadConfig([], {})).toThrow(/--api-url \(or PROVER_API_URL\) is required/);
    expect(() => loadConfig([...required, '--engines', 'risc0'], {})).toThrow(ConfigError);
    expect(() => loadConfig([...required, '--concurrency', '0'], {})).toThrow(/--concurrency must be a number ≥ 1/);
    expect(() => loadConfig([...required, '--bogus', 'x'], {})).toThrow();
    expect(() => loadConfig([...required, '--timeouts', 'fly=3'], {})).toThrow(/op=seconds/);
  });

  it('documents every flag with its environment variable', () => {
    const text = usage();
    for (const v of ['PROVER_API_URL', 'PROVER_AGENT_TOKEN', 'PROVER_GPUS', 'PROVER_SHUTDOWN_GRACE', 'PROVER_METRICS_PORT'])
      expect(text).toContain(v);
  });

  it('needs no Cloudflare credential: the agent token is the host’s only secret', () => {
    const cfg = loadConfig(required, {});
    expect(JSON.stringify(cfg)).not.toMatch(/queue|cloudflare/i);
    expect(usage()).not.toMatch(/CF_|Queues > Edit/);
    // The flags an older deployment passed are refused, not silently ignored.
    expect(() => loadConfig([...required, '--queue-token', 'cf'], {})).toThrow();
  });
});
