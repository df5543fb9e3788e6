// POST /internal/v1/jobs/claim: an agent asks for the best job it can serve. One D1
// batch (claimJob, src/jobs/state.ts): the agent token, the claim and everything the
// agent needs to run the job. What the agent declares is held to its token: its machine
// type must be the token's, and it takes no more GPUs or leases than the token allows
// (./declaration.ts). Claims write nothing about the agent itself: its
// presence is reported at most once a minute (src/features/fleet/agents.ts).
import { Hono, type Context } from 'hono';
import { zValidator } from '@hono/zod-validator';
import {
  gpusUsed,
  MAX_INLINE_ARTIFACT_BYTES,
  type ClaimedJob,
  type ClaimRequest,
  type ClaimResponse,
  type NextClaim,
} from 'prover-agent/protocol';
import type { Env } from '../../env.ts';
import { scheduleLeaseCheck } from '../../jobs/lease-checks.ts';
import { fleetSettings, tenantLimits, type AgentTimings } from '../../jobs/settings.ts';
import { contractOf } from '../../jobs/kinds/index.ts';
import { claimJob, roomOf, scopeAllows, type AgentCapabilities, type ClaimOutcome } from '../../jobs/state.ts';
import { whyUnservable } from '../../jobs/sweep.ts';
import { randomToken, sha256Hex, toBase64 } from '../../lib/crypto.ts';
import { ApiError, validationHook } from '../../lib/errors.ts';
import { jsonBody } from '../../lib/body.ts';
import { BODY_CAPS, MAX_INTERNAL_JSON_BYTES } from '../../lib/limits.ts';
import { json } from '../../middleware/door.ts';
import { limitToken } from '../../middleware/rate-limit.ts';
import { bearerHash, fleetDoor, seenLiveJobToken, type InternalEnv } from './auth.ts';
import { otherMachineType, requirePricedMachineType } from './declaration.ts';
import { ClaimRequestSchema } from './schemas.ts';

export const jobsInternalApi = new Hono<InternalEnv>();

jobsInternalApi.post(
  '/claim',
  fleetDoor.agent(json(BODY_CAPS.agentReport)),
  jsonBody(MAX_INTERNAL_JSON_BYTES),
  zValidator('json', ClaimRequestSchema, validationHook),
  async (c) => c.json(await claimFor(c, await bearerHash(c), c.req.valid('json')), 200),
);

/**
 * A claim for the agent token `agentTokenHash`: the claim route's, and a completion's
 * next claim (src/features/fleet/lease.ts). 401 for a revoked token, 403 for another
 * machine type than the token's or one the deployment does not price.
 */
export async function claimFor(c: Context<InternalEnv>, agentTokenHash: string, req: ClaimRequest): Promise<ClaimResponse> {
  const settings = fleetSettings(c.env);
  await requirePricedMachineType(c, settings.machineRates, req.machine_type, agentTokenHash);
  const now = Date.now();
  const caps: AgentCapabilities = {
    agentId: req.agent_id,
    machineType: req.machine_type,
    gpus: req.gpus,
    engines: req.engines,
    configs: req.configs,
  };
  const token = randomToken('jt', 32);
  const tokenHash = await sha256Hex(token);
  const leaseId = crypto.randomUUID();
  const claim = await claimJob(
    c.get('db'),
    caps,
    { id: leaseId, tokenHash },
    { tokenHash: agentTokenHash, hintJobId: req.hint_job_id },
    settings,
    now,
  );
  if (!claim.scope) throw new ApiError(401, 'Invalid or revoked agent token');
  // Nothing was claimed for another machine type than the token's (nextJobFor): say why.
  if (claim.scope.machine_type !== caps.machineType) throw otherMachineType(claim.scope.machine_type, caps.machineType);
  if (claim.job) {
    // Whatever becomes of the agent (or of this request: describing the job reads R2),
    // its lease is looked at again once it should have expired.
    c.executionCtx.waitUntil(scheduleLeaseCheck(c.env, { job_id: claim.job.id, lease_id: leaseId }, claim.job.lease_expires_at!, now));
    // Its heartbeats' door takes it for live without a read, on this isolate (./auth.ts).
    seenLiveJobToken(tokenHash);
  }
  const job = claim.job ? await describeClaim(c.env, claim, token, settings) : null;
  return { job, hint: hintOutcome(req.hint_job_id, claim, caps) };
}

/**
 * A completion's next claim (protocol NextClaim), for the agent token that claimed the
 * completed lease (`agentTokenHash`; undefined once revoked): counted against that
 * token's budget as a claim of its own is. Its job, null for none; undefined when none
 * was made (over budget, refused, or failed: the agent then claims by itself, and its
 * own claim hears why). The completion it rides with stands either way.
 */
export async function claimWithCompletion(
  c: Context<InternalEnv>,
  agentTokenHash: string | undefined,
  req: NextClaim,
): Promise<ClaimedJob | null | undefined> {
  if (!agentTokenHash) return undefined;
  try {
    limitToken(c, 'agent', agentTokenHash);
    return (await claimFor(c, agentTokenHash, req)).job;
  } catch (err) {
    if (!(err instanceof ApiError))
      console.error(
        JSON.stringify({ level: 'warn', msg: 'claim with a completion failed; the agent claims by itself', error: String(err) }),
      );
    return undefined;
  }
}

/** What became of the job the agent's queue notice named: whether to ack the notice or hand it back. */
function hintOutcome(hintId: string | null | undefined, claim: ClaimOutcome, caps: AgentCapabilities): ClaimResponse['hint'] {
  if (!hintId) return 'none';
  if (claim.job?.id === hintId) return 'claimed';
  const hinted = claim.hinted;
  if (!hinted || hinted.status !== 'queued') return 'not-queued';
  // Outside the agent token's scope: never this agent's, whatever it declares.
  if (claim.scope && !scopeAllows(claim.scope, hinted)) return 'not-servable';
  // Held by its organization's quota: the sweep notifies its lane again once it may start.
  if (hinted.held_by_quota) return 'not-servable';
  // The token holds all it may (its max_leases): not this agent's now; the notice comes back in a while.
  const room = claim.scope && roomOf(claim.scope, caps.gpus);
  if (!room) return 'not-servable';
  return whyUnservable(hinted, [{ ...caps, gpus: room.gpus }]) === null ? 'still-queued' : 'not-servable';
}

async function describeClaim(env: Env, claim: ClaimOutcome, token: string, timings: AgentTimings): Promise<ClaimedJob> {
  const { job, lease, config, program } = claim;
  if (!job || !lease || !config) throw new Error(`claim of job ${job?.id} came back without its lease or config`);
  const kind = contractOf(job.kind);
  const logCaps = tenantLimits(env);
  const artifacts = Object.entries(lease.artifacts).filter((e): e is [string, string] => typeof e[1] === 'string' && e[1] !== '');
  return {
    id: job.id,
    kind: job.kind,
    subject_id: job.subject_id,
    attempt: job.attempt,
    lease_id: job.lease_id!,
    job_token: token,
    lease_expires_at: job.lease_expires_at!,
    heartbeat_interval_ms: timings.heartbeatIntervalMs,
    cancel_check_interval_ms: timings.cancelCheckIntervalMs,
    num_gpus: gpusUsed(job.engine, job.num_gpus),
    priority: job.priority,
    config: {
      id: config.id,
      engine: config.engine,
      openvm_version: config.openvm_version,
      stark_backend_version: config.stark_backend_version,
      app_vm_commit: config.app_vm_commit,
      deferral_enabled: config.deferral_enabled,
      public_values_bytes: config.public_values_bytes,
      // No secret of the deployment's: dev proofs are sealed by the Worker (src/jobs/dev-proofs.ts).
    },
    program: program && { id: program.id, app_exe_commit: program.app_exe_commit },
    proof: null,
    execution: null,
    verification: null,
    // What the kind hands over of its subject (a proof's type, an execution's mode, ...).
    ...(claim.subject ? kind.claim.subject?.describe(claim.subject) : {}),
    // The names of the files the lease carries (leases.artifacts), in the order to fetch them;
    // the keys of those other jobs share are their cache ids.
    artifacts: artifacts.map(([name]) => name),
    shared_artifacts: Object.fromEntries(artifacts.filter(([name]) => kind.claim.isShared(name))),
    inline_artifacts: await smallInputs(
      env,
      artifacts.filter(([name]) => !kind.claim.isShared(name)),
    ),
    // The log's caps too, so the agent keeps room for an attempt's last lines under them.
    log: { seq: job.log_seq, offset: job.log_bytes, max_bytes: logCaps.LOG_MAX_BYTES, max_chunks: logCaps.LOG_MAX_CHUNKS },
    cycle_limit: job.cycle_limit,
    // A span from now, not the instant: the agent stops the job there whatever its host's clock says.
    deadline_in_ms: job.deadline_at === null ? null : Math.max(0, job.deadline_at - Date.now()),
  };
}

/**
 * The job's own input files up to MAX_INLINE_ARTIFACT_BYTES, base64: read here, next to
 * the bucket, they spare the agent a download round trip. A ranged read bounds what a
 * large file costs (its size comes back with the first bytes; the rest is never read).
 */
async function smallInputs(env: Env, files: [name: string, key: string][]): Promise<Record<string, string>> {
  const read = await Promise.all(
    files.map(async ([name, key]) => {
      const obj = await env.ARTIFACTS.get(key, { range: { offset: 0, length: MAX_INLINE_ARTIFACT_BYTES } });
      if (!obj) return null; // the download will say it is missing
      if (obj.size > MAX_INLINE_ARTIFACT_BYTES) {
        await obj.body.cancel();
        return null;
      }
      return [name, toBase64(new Uint8Array(await obj.arrayBuffer()))] as const;
    }),
  );
  return Object.fromEntries(read.filter((e) => e !== null));
}
