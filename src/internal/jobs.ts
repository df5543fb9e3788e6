// POST /internal/v1/jobs/claim: an agent asks for the best job it can serve.
import { eq, lt, ne, or } from 'drizzle-orm';
import { Hono } from 'hono';
import { zValidator } from '@hono/zod-validator';
import type { ClaimedJob, ClaimResponse } from '../../prover-agent/src/protocol.ts';
import { agents, configs, executions, jobs, programs, proofs, verifications } from '../db/schema.ts';
import type { Db } from '../db/client.ts';
import { notifyJob } from '../jobs/dispatch.ts';
import { fleetSettings, type AgentTimings } from '../jobs/settings.ts';
import { claimJob, expireLeases, gpusUsed, type AgentCapabilities, type JobRow } from '../jobs/state.ts';
import { whyUnservable } from '../jobs/sweep.ts';
import { randomToken, sha256Hex } from '../lib/crypto.ts';
import { validationHook } from '../lib/errors.ts';
import { jsonBody } from '../lib/body.ts';
import { MAX_INTERNAL_JSON_BYTES } from '../lib/limits.ts';
import { requireAgentToken, type InternalEnv } from './auth.ts';
import { ClaimRequestSchema } from './schemas.ts';
import type { Env } from '../env.ts';

export const jobsInternalApi = new Hono<InternalEnv>();

/** An agent's last_seen_at is at most this stale while it claims (far below AGENT_STALE_SECONDS). */
const AGENT_SEEN_REFRESH_MS = 10_000;

jobsInternalApi.post('/claim', requireAgentToken, jsonBody(MAX_INTERNAL_JSON_BYTES), zValidator('json', ClaimRequestSchema, validationHook), async (c) => {
  const req = c.req.valid('json');
  const { db } = c.var;
  const settings = fleetSettings(c.env);
  const now = Date.now();
  const caps: AgentCapabilities = { agentId: req.agent_id, machineType: req.machine_type, gpus: req.gpus, engines: req.engines, configs: req.configs };

  await db
    .insert(agents)
    .values({
      id: req.agent_id,
      token_id: c.var.agentTokenId,
      name: req.name,
      machine_type: req.machine_type,
      gpus: req.gpus,
      engines: JSON.stringify(req.engines),
      configs: JSON.stringify(req.configs),
      last_seen_at: now,
    })
    .onConflictDoUpdate({
      target: agents.id,
      set: { name: req.name, machine_type: req.machine_type, gpus: req.gpus, engines: JSON.stringify(req.engines), configs: JSON.stringify(req.configs), last_seen_at: now },
      // Idle agents claim every few seconds: their row is rewritten only when it changed
      // or is getting old, so an idle fleet costs D1 reads, not writes.
      setWhere: or(
        lt(agents.last_seen_at, now - AGENT_SEEN_REFRESH_MS),
        ne(agents.name, req.name),
        ne(agents.machine_type, req.machine_type),
        ne(agents.gpus, req.gpus),
        ne(agents.engines, JSON.stringify(req.engines)),
        ne(agents.configs, JSON.stringify(req.configs)),
      ),
    });

  // Jobs whose agent vanished become claimable right here, not only at the next cron sweep.
  const { requeued } = await expireLeases(db, settings, now);
  if (requeued.length) c.executionCtx.waitUntil(Promise.all(requeued.map((j) => notifyJob(c.env, { job_id: j.id, kind: j.kind }))));

  const token = randomToken('jt', 32);
  const leaseId = crypto.randomUUID();
  const job = await claimJob(db, caps, { id: leaseId, tokenHash: await sha256Hex(token) }, settings, now);
  const hint = await hintOutcome(db, req.hint_job_id, job, caps);
  const body: ClaimResponse = { job: job ? await describeClaim(db, c.env, job, token, settings) : null, hint };
  return c.json(body, 200);
});

async function hintOutcome(db: Db, hintId: string | null | undefined, claimed: JobRow | null, caps: AgentCapabilities): Promise<ClaimResponse['hint']> {
  if (!hintId) return 'none';
  if (claimed?.id === hintId) return 'claimed';
  const hinted = await db.select().from(jobs).where(eq(jobs.id, hintId)).get();
  if (!hinted || hinted.status !== 'queued') return 'not-queued';
  return whyUnservable(hinted, [caps]) === null ? 'still-queued' : 'not-servable';
}

/**
 * The program a job works on, whatever its kind; null only for a verification of
 * an EVM proof against a config alone (POST /v1/verify?config_id=).
 */
export async function programOfJob(db: Db, job: Pick<JobRow, 'kind' | 'subject_id'>) {
  if (job.kind === 'verify') {
    const v = await db.select({ id: verifications.program_id }).from(verifications).where(eq(verifications.id, job.subject_id)).get();
    if (!v) throw new Error(`job verify/${job.subject_id} has no verification`);
    if (v.id === null) return null;
  }
  const programId =
    job.kind === 'commit'
      ? job.subject_id
      : job.kind === 'proof'
        ? (await db.select({ id: proofs.program_id }).from(proofs).where(eq(proofs.id, job.subject_id)).get())?.id
        : job.kind === 'verify'
          ? (await db.select({ id: verifications.program_id }).from(verifications).where(eq(verifications.id, job.subject_id)).get())?.id
          : (await db.select({ id: executions.program_id }).from(executions).where(eq(executions.id, job.subject_id)).get())?.id;
  if (!programId) throw new Error(`job ${job.kind}/${job.subject_id} has no program`);
  const program = await db.select().from(programs).where(eq(programs.id, programId)).get();
  if (!program) throw new Error(`program ${programId} vanished`);
  return program;
}

async function describeClaim(db: Db, env: Env, job: JobRow, token: string, timings: AgentTimings): Promise<ClaimedJob> {
  const [program, config] = await Promise.all([programOfJob(db, job), db.select().from(configs).where(eq(configs.id, job.config_id)).get()]);
  if (!config) throw new Error(`config ${job.config_id} vanished`);
  let proof: ClaimedJob['proof'] = null;
  let execution: ClaimedJob['execution'] = null;
  let verification: ClaimedJob['verification'] = null;
  // Verifications need no program files: the proof and, for STARK proofs, the baseline.
  const artifacts = job.kind === 'verify' ? [] : ['elf', 'vmexe'];
  if (job.kind === 'proof') {
    const row = (await db.select().from(proofs).where(eq(proofs.id, job.subject_id)).get())!;
    const children = (JSON.parse(row.child_proof_keys) as string[]).length;
    proof = { proof_type: row.proof_type, num_children: children };
    artifacts.push('input', 'baseline', ...Array.from({ length: children }, (_, i) => `child-${i}`));
  } else if (job.kind === 'execute') {
    const row = (await db.select().from(executions).where(eq(executions.id, job.subject_id)).get())!;
    execution = { mode: row.mode };
    artifacts.push('input');
  } else if (job.kind === 'verify') {
    const row = (await db.select({ proof_type: verifications.proof_type }).from(verifications).where(eq(verifications.id, job.subject_id)).get())!;
    verification = { proof_type: row.proof_type === 'evm' ? 'evm' : 'stark' };
    artifacts.push('proof', ...(program ? ['baseline'] : []));
  }
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
      ...(config.engine === 'dev' && env.DEV_PROOF_SECRET ? { dev_proof_secret: env.DEV_PROOF_SECRET } : {}),
    },
    program: program && { id: program.id, app_exe_commit: program.app_exe_commit },
    proof,
    execution,
    verification,
    artifacts,
    log: { seq: job.log_seq, offset: job.log_bytes },
  };
}
