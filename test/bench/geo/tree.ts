// npm run bench:geo: what the bench needs from a source tree (the baseline commit or the
// working tree), behind one interface. Everything that may differ between the two trees
// (helper signatures, seeding statements, the internal protocol, the agent's flags) is
// in that tree's adapter: ./baseline.ts (pinned to the baseline commit's shapes) and
// ./current.ts (the working tree; update it when the protocol changes).
import type { ChildProcess } from 'node:child_process';

/** Credentials and ids a freshly seeded stack has. */
export interface Seed {
  orgId: string;
  apiKey: string;
  agentToken: string;
  configId: string;
}

export interface TreeAdapter {
  /** The tree's root directory (has src/index.ts, wrangler.toml, prover-agent/). */
  root: string;
  /** Builds the Worker's static assets ([assets] directory) in the tree. */
  buildAssets(): Promise<void>;
  /**
   * Applies the tree's migrations to a new local state in `persistTo` and seeds an
   * organization (with quotas raised far above what the bench submits), an API key, an
   * agent token and a `dev` config, with the tree's own operator statements.
   */
  seedState(persistTo: string): Promise<Seed>;
  /** Starts `wrangler dev` on `port` with `entry` as the script and the tree's wrangler.toml otherwise. */
  startWorker(o: { entry: string; port: number; persistTo: string; vars: Record<string, string> }): Promise<ChildProcess>;
  stopWorker(worker: ChildProcess): Promise<void>;
  /** Marks a registered program ready (its commit job done) without a prover, as bench:api does. */
  markProgramReady(persistTo: string, programId: string): Promise<void>;

  /**
   * Worker vars the bench sets on the tree's stack. Leases must outlive the route
   * measurements (the default TTL is 12 s, shorter than 22 claims at simulated latency):
   * else later claims would requeue the jobs of earlier ones, and their heartbeats be refused.
   */
  workerVars: Record<string, string>;

  // --- The internal protocol (the tree's prover-agent/src/protocol.ts and src/features/fleet/) ---
  /** A claim as the tree's agents send it (today POST /internal/v1/jobs/claim), for an agent serving the `dev` engine. */
  claim(agentToken: string, agentId: string): ApiRequest;
  /** The job token in a claim's answer, or null when no job was handed out. */
  claimedJobToken(response: unknown): string | null;
  /** A heartbeat on a claimed job (today POST /internal/v1/lease/heartbeat with the job token). */
  heartbeat(jobToken: string): ApiRequest;

  // --- The tree's own agent CLI ---
  /** Arguments of `node <root>/prover-agent/bin/prover-agent.js ...` for one idle agent with the deployed polling defaults. */
  agentArgs(o: { url: string; agentToken: string; name: string; workDir: string }): string[];
  /** A line the agent logs once it is up. */
  agentReadyLog: RegExp;
  /** Environment of the tree's child processes (Node 22 first on PATH, telemetry off). */
  childEnv(): NodeJS.ProcessEnv;
}

/** A request to the Worker: path (and query) below its origin. */
export interface ApiRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

/** A JSON POST with a bearer token, the shape of every internal call so far. */
export const bearerPost = (path: string, token: string, body: unknown): ApiRequest => ({
  method: 'POST',
  path,
  headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

/** What the generic adapter needs of a tree's src/tools/wrangler.ts. */
export interface WranglerTools {
  applyLocalMigrations(persistTo?: string): Promise<void>;
  d1Execute(t: { remote: boolean; persistTo?: string }, statements: string[]): Promise<Record<string, unknown>[][]>;
  spawnWranglerDev(o: { port: number; persistTo?: string; extraArgs?: string[] }): Promise<ChildProcess>;
  stopGroup(child: ChildProcess, graceMs?: number): Promise<void>;
  childEnv(extra?: Record<string, string>): NodeJS.ProcessEnv;
}

/** Quotas of the bench organization: far above what a run submits, so no request meets them. */
export const BENCH_ORG_LIMITS = { maxActiveJobs: 10_000_000, maxGpus: 10_000_000 };

/**
 * The parts of an adapter every tree so far does the same way, from the tree's own
 * helpers. An adapter spreads this and adds the protocol and agent parts.
 */
export function stackParts(
  root: string,
  tools: WranglerTools,
  /** The seeding SQL, from the tree's operator statements, and what it creates. */
  seedSql: () => Promise<{ sql: string[]; seed: Seed }>,
  /** SQL that marks a program ready and its commit job done. */
  readySql: (programId: string) => string[],
): Pick<TreeAdapter, 'root' | 'buildAssets' | 'seedState' | 'startWorker' | 'stopWorker' | 'markProgramReady' | 'childEnv'> {
  return {
    root,
    async buildAssets() {
      const { spawn } = await import('node:child_process');
      const child = spawn(process.execPath, ['src/tools/build-assets.ts'], {
        cwd: root,
        env: tools.childEnv(),
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let err = '';
      child.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
      const code = await new Promise<number | null>((resolve, reject) => child.on('error', reject).on('close', resolve));
      if (code !== 0) throw new Error(`building the assets of ${root} failed (exit code ${code}):\n${err}`);
    },
    async seedState(persistTo) {
      await tools.applyLocalMigrations(persistTo);
      const { sql, seed } = await seedSql();
      await tools.d1Execute({ remote: false, persistTo }, sql);
      return seed;
    },
    async startWorker({ entry, port, persistTo, vars }) {
      const varArgs = Object.entries(vars).flatMap(([k, v]) => ['--var', `${k}:${v}`]);
      return tools.spawnWranglerDev({
        port,
        persistTo,
        extraArgs: [entry, '--config', `${root}/wrangler.toml`, '--log-level', 'warn', ...varArgs],
      });
    },
    stopWorker: (worker) => tools.stopGroup(worker, 5_000),
    async markProgramReady(persistTo, programId) {
      await tools.d1Execute({ remote: false, persistTo }, readySql(programId));
    },
    childEnv: () => tools.childEnv(),
  };
}
