// Helpers for tests of the fleet's internal API: an agent is just HTTP calls here.
import { env } from 'cloudflare:test';
import {
  devConfigDigestMessage,
  devHex,
  devParseHex,
  devProofText,
  ENGINE_NAMES,
  readDevProof,
  unsealedDevProof,
  type ClaimRequest,
  type ClaimResponse,
  type ClaimedJob,
  type DevProof,
  type PresenceResponse,
  type ProofType,
} from 'prover-agent/protocol';
import { sealDevProof } from '../../src/jobs/dev-proofs.ts';
import { createAgentToken, type AgentTokenLimits, type AgentTokenScope } from '../../src/admin/statements.ts';
import { checkLease } from '../../src/jobs/lease-checks.ts';
import { sha256Hex } from '../../src/lib/crypto.ts';
import { api, json, runAdmin, leaseCheckBindings } from './helpers.ts';

export interface TestAgent {
  token: string;
  caps: ClaimRequest;
}

/**
 * An agent token and an agent that reported its presence (it is online, as a running
 * agent is). The token's scope is `opts.scope`, by default every engine under every
 * config; its limits `opts.limits`, by default the machine type and GPUs the agent
 * declares and room for 100 leases.
 */
export async function seedAgent(
  caps: Partial<ClaimRequest> = {},
  opts: { online?: boolean; scope?: AgentTokenScope; limits?: Partial<AgentTokenLimits> } = {},
): Promise<TestAgent> {
  const declared = {
    agent_id: crypto.randomUUID(),
    name: 'test-agent',
    machine_type: 'test-machine',
    gpus: 8,
    engines: ['dev'],
    configs: [],
    ...caps,
  };
  const token = await runAdmin(
    createAgentToken(`agent-${crypto.randomUUID().slice(0, 8)}`, opts.scope ?? { engines: ENGINE_NAMES, configs: null }, {
      machineType: declared.machine_type,
      maxGpus: declared.gpus,
      maxLeases: 100,
      ...opts.limits,
    }),
  );
  const agent = { token, caps: declared };
  if (opts.online ?? true) await presence(agent);
  return agent;
}

/** Reports the agent's presence; the answer carries its queue token. */
export async function presence(agent: TestAgent): Promise<PresenceResponse> {
  const { hint_job_id: _, ...who } = agent.caps;
  return json(await api(null, '/internal/v1/agents/presence', bearer(agent.token, { method: 'POST', body: JSON.stringify(who) })), 200);
}

const bearer = (token: string, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}`, 'content-type': 'application/json' },
});

export async function claim(agent: TestAgent, extra: Partial<ClaimRequest> = {}): Promise<ClaimResponse> {
  return json(
    await api(null, '/internal/v1/jobs/claim', bearer(agent.token, { method: 'POST', body: JSON.stringify({ ...agent.caps, ...extra }) })),
    200,
  );
}

export async function claimJob(agent: TestAgent): Promise<ClaimedJob> {
  const r = await claim(agent);
  if (!r.job) throw new Error('expected to claim a job');
  return r.job;
}

/** A callback on a claimed job's lease. */
export function lease(job: Pick<ClaimedJob, 'job_token'>, path: string, body?: unknown, init: RequestInit = {}) {
  return api(
    null,
    `/internal/v1/lease${path}`,
    bearer(job.job_token, {
      method: body === undefined ? 'GET' : 'POST',
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...init,
    }),
  );
}

export function upload(job: Pick<ClaimedJob, 'job_token'>, name: string, content: string) {
  return api(null, `/internal/v1/lease/results/${name}`, {
    method: 'PUT',
    body: content,
    headers: { authorization: `Bearer ${job.job_token}` },
  });
}

/** Makes a job's lease overdue, as if its agent had died a while ago (nothing has looked at it yet). */
export async function makeOverdue(jobId: string) {
  await env.DB.prepare('UPDATE jobs SET lease_expires_at = ? WHERE id = ?')
    .bind(Date.now() - 1000, jobId)
    .run();
}

/** The job's agent died a while ago, and the look at its lease that its claim scheduled arrives (src/jobs/lease-checks.ts). */
export async function expireLease(job: Pick<ClaimedJob, 'id' | 'lease_id'>) {
  await makeOverdue(job.id);
  return checkLease(leaseCheckBindings(), { type: 'lease-check', job_id: job.id, lease_id: job.lease_id });
}

export async function jobRow(jobId: string) {
  return env.DB.prepare('SELECT * FROM jobs WHERE id = ?').bind(jobId).first<any>();
}

/** Takes every queued job out of the way (other test files leave some behind in the shared D1). */
export async function drainQueuedJobs() {
  await env.DB.prepare(`UPDATE jobs SET status = 'done' WHERE status IN ('queued', 'leased')`).run();
}

const sha256 = async (bytes: Uint8Array) => new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));

/**
 * A proof of the claimed dev job as the host's dev engine writes it: unsealed (the Worker
 * seals it at completion), stating the job's program and config and `publicValues`,
 * which the completion must report too.
 */
export async function devProofOf(
  job: Pick<ClaimedJob, 'config' | 'program'>,
  publicValues = '0x00',
  type: ProofType = 'stark',
): Promise<string> {
  return devProofText(await devProofStatement(job.program!.app_exe_commit!, job.config, publicValues, type));
}

async function devProofStatement(
  appExeCommit: string,
  config: ClaimedJob['config'],
  publicValues: string,
  type: ProofType,
): Promise<DevProof> {
  return unsealedDevProof(
    {
      kind: type,
      appExeCommit: devParseHex(appExeCommit)!,
      appVmCommit: devParseHex(config.app_vm_commit)!,
      configDigest: await sha256(devConfigDigestMessage(config)),
      inputDigest: new Uint8Array(32),
      childDigests: [],
    },
    devParseHex(publicValues)!,
  );
}

/** A dev proof sealed with `secret` (the deployment's, or a guessed one), for a verification. */
export async function sealedDevProof(
  appExeCommit: string,
  config: ClaimedJob['config'],
  publicValues: string,
  secret: string,
  type: ProofType = 'stark',
): Promise<string> {
  return devProofText(await sealDevProof(await devProofStatement(appExeCommit, config, publicValues, type), secret));
}

/** The stored proof file read back: a sealed dev proof with these public values. */
export function expectSealed(text: string, publicValues = '0x00') {
  const proof = readDevProof(JSON.parse(text));
  if (proof.mac.every((b) => b === 0)) throw new Error('the stored proof is not sealed');
  if (devHex(proof.publicValues) !== publicValues.toLowerCase()) throw new Error('the stored proof states other public values');
}

/** The baseline a program serves: the object its record names, its bytes checked against the record's digest. */
export async function servedBaseline(programId: string): Promise<string> {
  const row = await env.DB.prepare('SELECT baseline_key, baseline_sha256 FROM programs WHERE id = ?')
    .bind(programId)
    .first<{ baseline_key: string | null; baseline_sha256: string | null }>();
  if (!row?.baseline_key || !row.baseline_sha256) throw new Error(`program ${programId} names no baseline and digest`);
  const text = await (await env.ARTIFACTS.get(row.baseline_key))!.text();
  if ((await sha256Hex(text)) !== row.baseline_sha256)
    throw new Error(`program ${programId}: its baseline is not the bytes its digest names`);
  return text;
}
