// npm run bench:geo: the adapter of the working tree ("now"). It uses this tree's own
// helpers and types, so `npm run typecheck` flags it when they change. When the
// internal protocol changes (prover-agent/src/protocol.ts), update claim,
// claimedJobToken and heartbeat here; when the agent's flags change, agentArgs.
// The baseline's adapter (./baseline.ts) stays as it is: it describes the baseline commit.
import {
  createAgentToken,
  createApiKey,
  createConfig,
  createOrganization,
  DEV_ENGINE_OPENVM_TOML,
  devAppVmCommit,
  lit,
  setOrganizationLimits,
  TARGET_RELEASE,
} from '../../../src/admin/statements.ts';
import * as wrangler from '../../../src/tools/wrangler.ts';
import type { ClaimRequest, ClaimResponse, HeartbeatRequest } from 'prover-agent/protocol';
import { BENCH_ORG_LIMITS, bearerPost, stackParts, type TreeAdapter } from './tree.ts';

export function currentAdapter(): TreeAdapter {
  return {
    ...stackParts(
      wrangler.ROOT.replace(/\/+$/, ''),
      wrangler,
      async () => {
        const org = createOrganization('bench-geo');
        const orgId = org.output.at(-1)!;
        const steps = [
          org,
          setOrganizationLimits(orgId, BENCH_ORG_LIMITS),
          await createApiKey(orgId, 'bench-geo@localhost'),
          // Room for every claim the bench holds at once: its limits are not what it measures.
          await createAgentToken(
            'bench-geo-agents',
            { engines: ['dev'], configs: null },
            { machineType: 'bench', maxGpus: 0, maxLeases: 1000 },
          ),
          createConfig({
            ...TARGET_RELEASE,
            app_vm_commit: await devAppVmCommit(DEV_ENGINE_OPENVM_TOML),
            engine: 'dev',
            deferral_enabled: true,
            openvm_toml: DEV_ENGINE_OPENVM_TOML,
          }),
        ];
        const [, , apiKey, agentToken, config] = steps.map((s) => s.output.at(-1)!);
        return { sql: steps.flatMap((s) => s.sql), seed: { orgId, apiKey: apiKey, agentToken: agentToken, configId: config } };
      },
      (programId) => [
        `UPDATE programs SET status = 'ready', app_exe_commit = ${lit('0x' + 'cd'.repeat(32))}, baseline_key = ${lit(`programs/${programId}/baseline.json`)} WHERE id = ${lit(programId)};`,
        `UPDATE jobs SET status = 'done' WHERE kind = 'commit' AND subject_id = ${lit(programId)};`,
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
      } satisfies ClaimRequest),
    claimedJobToken: (response) => (response as ClaimResponse).job?.job_token ?? null,
    heartbeat: (jobToken) => bearerPost('/internal/v1/lease/heartbeat', jobToken, {} satisfies HeartbeatRequest),

    // As test/e2e/stack.ts startAgent, without its fast test timings: the agent's own
    // default polling is what a deployed fleet runs with.
    agentArgs: ({ url, agentToken, name, workDir }) => [
      'run',
      '--api-url',
      url,
      '--agent-token',
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
      '--kill-grace',
      '2',
    ],
    agentReadyLog: /agent running/,
  };
}
