// npm run bench:geo: the adapter of the baseline tree ("today", default commit
// 7e171c74, extracted into a temporary directory). It loads that tree's own helpers
// (src/tools/wrangler.ts, src/admin/statements.ts) and speaks its internal protocol, so
// it describes the baseline commit and needs no change when the working tree changes.
// The shapes below are that commit's, written out rather than imported from the working
// tree, whose types may move on.
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { BENCH_ORG_LIMITS, bearerPost, stackParts, type Seed, type TreeAdapter, type WranglerTools } from './tree.ts';

interface Step {
  sql: string[];
  output: string[];
}

/** src/admin/statements.ts as of the baseline commit (the parts used). */
interface BaselineStatements {
  lit(v: string | number | boolean | null): string;
  createOrganization(name: string, id?: string): Step;
  setOrganizationLimits(orgId: string, limits: { maxActiveJobs?: number | null; maxGpus?: number | null; shareWeight?: number }): Step;
  createApiKey(orgId: string, owner: string): Promise<Step>;
  createAgentToken(name: string): Promise<Step>;
  createConfig(cfg: {
    openvm_version: string;
    stark_backend_version: string;
    app_vm_commit: string;
    engine: 'dev' | 'openvm';
    deferral_enabled: boolean;
    openvm_toml?: string;
  }): Step;
  DEV_ENGINE_OPENVM_TOML: string;
}

/** src/tools/wrangler.ts as of the baseline commit (the parts used). */
interface BaselineWrangler extends WranglerTools {
  ROOT: string;
  spawnWranglerDev(o: { port: number; persistTo?: string; extraArgs?: string[] }): Promise<ChildProcess>;
}

/** ClaimRequest / ClaimResponse / HeartbeatRequest of the baseline's prover-agent/src/protocol.ts. */
interface BaselineClaimRequest {
  agent_id: string;
  name: string;
  machine_type: string;
  gpus: number;
  engines: string[];
  configs: string[];
  hint_job_id?: string | null;
}
interface BaselineClaimResponse {
  job: { job_token: string } | null;
}

export async function baselineAdapter(root: string): Promise<TreeAdapter> {
  const load = <T>(rel: string) => import(pathToFileURL(path.join(root, rel)).href) as Promise<T>;
  const wrangler = await load<BaselineWrangler>('src/tools/wrangler.ts');
  const st = await load<BaselineStatements>('src/admin/statements.ts');
  if (path.resolve(wrangler.ROOT) !== path.resolve(root))
    throw new Error(`the baseline's tools think their root is ${wrangler.ROOT}, not ${root}`);
  return {
    ...stackParts(
      root,
      wrangler,
      async () => {
        const org = st.createOrganization('bench-geo');
        const orgId = org.output.at(-1)!;
        const steps = [
          org,
          st.setOrganizationLimits(orgId, BENCH_ORG_LIMITS),
          await st.createApiKey(orgId, 'bench-geo@localhost'),
          await st.createAgentToken('bench-geo-agents'),
          st.createConfig({
            openvm_version: '2.0.0',
            stark_backend_version: '2.0.0',
            app_vm_commit: '0x' + '5a'.repeat(32),
            engine: 'dev',
            deferral_enabled: true,
            openvm_toml: st.DEV_ENGINE_OPENVM_TOML,
          }),
        ];
        const [, , apiKey, agentToken, config] = steps.map((s) => s.output.at(-1)!);
        const seed: Seed = { orgId, apiKey: apiKey, agentToken: agentToken, configId: config };
        return { sql: steps.flatMap((s) => s.sql), seed };
      },
      (programId) => [
        `UPDATE programs SET status = 'ready', app_exe_commit = ${st.lit('0x' + 'cd'.repeat(32))} WHERE id = ${st.lit(programId)};`,
        `UPDATE jobs SET status = 'done' WHERE kind = 'commit' AND subject_id = ${st.lit(programId)};`,
      ],
    ),

    workerVars: { LEASE_TTL_SECONDS: '3600' },

    claim: (agentToken, agentId) =>
      bearerPost('/internal/v1/jobs/claim', agentToken, {
        agent_id: agentId,
        name: 'bench-geo',
        machine_type: 'bench',
        gpus: 0,
        engines: ['dev'],
        configs: [],
        hint_job_id: null,
      } satisfies BaselineClaimRequest),
    claimedJobToken: (response) => (response as BaselineClaimResponse).job?.job_token ?? null,
    heartbeat: (jobToken) => bearerPost('/internal/v1/lease/heartbeat', jobToken, {}),

    // As the baseline's test/e2e/stack.ts startAgent, with the agent's deployed defaults
    // for polling instead of the e2e suite's fast ones (written out: those are the defaults
    // of that commit's prover-agent/src/agent/config.ts).
    agentArgs: ({ url, agentToken, name, workDir }) => [
      'run',
      '--api-url',
      url,
      '--agent-token',
      agentToken,
      '--queue-url',
      `${url}/client/v4`,
      '--account-id',
      'local',
      '--queue-id',
      'zk-proving-jobs-local',
      '--queue-token',
      agentToken,
      '--name',
      name,
      '--engines',
      'dev',
      '--gpus',
      '0',
      '--machine-type',
      'bench',
      '--work-dir',
      workDir,
      '--metrics-port',
      '0',
      '--poll-interval',
      '1',
      '--idle-claim-interval',
      '2',
      '--kill-grace',
      '2',
    ],
    agentReadyLog: /agent running/,
  };
}
