// The wire protocol between prover-agents and the service's internal API
// (/internal/v1), the package's `prover-agent/protocol` export: the Worker imports it
// by that name, never a path into this package. Types, constants and a few pure
// functions; it imports nothing but its own modules (./protocol/*.ts), so it depends
// on no engine, no Node API and no Worker API. The Worker validates requests against
// these with zod (src/features/fleet/schemas.ts) and the agent's API client sends them.
import type { EngineConfig, EngineMetrics, JobKind, ProofType, ProvePhase, ResultName, VerifiableProofType } from './protocol/jobs.ts';
import type { PublishedKey, PublishedKeyName, PublishedKeys } from './protocol/keys.ts';

export * from './protocol/engines.ts';
export * from './protocol/job-files.ts';
export * from './protocol/jobs.ts';
export * from './protocol/keys.ts';
export * from './protocol/openvm-config.ts';

/** Who an agent is and what it can serve: what presence reports and every claim carry. */
export interface AgentIdentity {
  /** Stable for one agent process; names it in the service's records. */
  agent_id: string;
  name: string;
  machine_type: string;
  engines: string[];
  /** Config ids served; empty = every config of the engines. */
  configs: string[];
}

/**
 * POST /internal/v1/agents/presence (agent token): who the agent is and what it can
 * serve, for the fleet view and the sweep's "why does this job wait". Sent at start
 * and then every `presence_interval_ms` (a minute): an idle agent's only D1 write.
 */
export interface PresenceRequest extends AgentIdentity {
  /** GPUs of this agent (all of them, busy or not). */
  gpus: number;
}
export interface PresenceResponse {
  /** Report presence again within this long. */
  presence_interval_ms: number;
  /**
   * Bearer token of /internal/v1/queue/* until `queue_token_expires_at` (epoch ms):
   * signed by the service, checked without a database, renewed by every presence
   * report, so a revoked agent token stops pulling within its lifetime.
   */
  queue_token: string;
  queue_token_expires_at: number;
}

/** POST /internal/v1/agents/leave (agent token): a graceful stop; the fleet stops counting the agent at once. */
export interface LeaveRequest {
  agent_id: string;
}

/**
 * POST /internal/v1/queue/pull (queue token): a batch of job notices from the jobs
 * queue, each invisible to other agents for `visibility_timeout_ms` unless acked or
 * handed back. The service holds the queue's credentials; a GPU host holds none.
 */
export interface QueuePullRequest {
  batch_size: number;
  visibility_timeout_ms: number;
}
export interface QueueMessage {
  id: string;
  /** Base64 of the notice's JSON for `json` content (metadata["CF-Content-Type"]), else the text. */
  body: string;
  attempts: number;
  lease_id: string;
  timestamp_ms: number;
  metadata?: Record<string, string>;
}
export interface QueuePullResponse {
  messages: QueueMessage[];
}

/** POST /internal/v1/queue/ack (queue token): settles pulled notices; `retries` hands them back (after `delay_seconds`). */
export interface QueueAckRequest {
  acks: { lease_id: string }[];
  retries: { lease_id: string; delay_seconds?: number }[];
}
export interface QueueAckResponse {
  ack_count: number;
  retry_count: number;
}

/** POST /internal/v1/jobs/claim (agent token). */
export interface ClaimRequest extends AgentIdentity {
  /** GPUs free on this agent right now. */
  gpus: number;
  /** The job named by the queue message that prompted this claim, if any. */
  hint_job_id?: string | null;
}

/**
 * `hint` says what became of the hinted job, so the agent knows whether to ack its
 * queue message (claimed, or not queued any more) or hand it back for another agent
 * (still queued: not servable here, or this agent took a better job first).
 */
export interface ClaimResponse {
  job: ClaimedJob | null;
  hint: 'claimed' | 'not-queued' | 'not-servable' | 'still-queued' | 'none';
}

export interface ClaimedJob {
  id: string;
  kind: JobKind;
  subject_id: string;
  attempt: number;
  lease_id: string;
  /** Bearer token for every callback on this lease. */
  job_token: string;
  /** Epoch ms; heartbeats renew it. */
  lease_expires_at: number;
  /** Renew the lease (POST /lease/heartbeat, a D1 write) this often. */
  heartbeat_interval_ms: number;
  /** Between heartbeats, look for a cancel (GET /lease/status, a read) this often. */
  cancel_check_interval_ms: number;
  num_gpus: number;
  priority: number;
  config: EngineConfig;
  /** Null only for a verification of an EVM proof against a config alone. */
  program: { id: string; app_exe_commit: string | null } | null;
  proof: { proof_type: ProofType; num_children: number } | null;
  execution: { mode: string } | null;
  /** Verify jobs: which kind of proof the `proof` artifact holds. */
  verification: { proof_type: VerifiableProofType } | null;
  /** Names for GET /internal/v1/lease/artifacts/{name}: the input files of the job's kind (a proof's child proofs last, childProofArtifact()). */
  artifacts: string[];
  /**
   * Of those, the ones other jobs use too (a program's ELF, VMEXE and baseline, a child
   * proof), each with an id that names the same bytes for as long as it exists: an
   * agent may keep them between jobs (its artifact cache) instead of downloading them
   * again. Absent from an older service: then everything is downloaded.
   */
  shared_artifacts?: Record<string, string>;
  /**
   * Of the others (the job's own input), those up to MAX_INLINE_ARTIFACT_BYTES, as
   * base64 of their bytes: an instant job needs no download round trip. Absent from an
   * older service.
   */
  inline_artifacts?: Record<string, string>;
  /** Where this attempt's logs continue, and what the job's log may hold. */
  log: LogPosition;
  /**
   * The job's cycle limit (docs/callers.md "Job limits"): an engine stops the guest when it
   * reaches it and the agent reports /fail with `limit` (an engine that cannot stop
   * mid-run meters first and refuses before proving). Null or absent: none.
   */
  cycle_limit?: number | null;
  /**
   * Milliseconds from the claim to the job's deadline (docs/callers.md "Job limits"); null: it has
   * none. The agent stops the job there, as the service does at its next heartbeat; a
   * span rather than an instant, so the host's clock does not matter. Absent from an
   * older service.
   */
  deadline_in_ms?: number | null;
}

/**
 * Where an attempt's log continues (the next chunk's sequence number and byte offset),
 * and the caps on the job's whole log, all its attempts together (docs/callers.md "Limits";
 * absent from an older service): a chunk past them is refused (413) and the service
 * ends the log with its truncation marker.
 */
export interface LogPosition {
  seq: number;
  offset: number;
  max_bytes?: number;
  max_chunks?: number;
}

/** POST /internal/v1/lease/heartbeat (job token). */
export interface HeartbeatRequest {
  phase?: ProvePhase;
  metrics?: EngineMetrics;
}
export interface HeartbeatResponse {
  /** The job was canceled: stop the engine and report /lease/canceled. */
  cancel: boolean;
  lease_expires_at: number;
}

/** GET /internal/v1/lease/status (job token): read only; 409 once the lease is not current. */
export interface LeaseStatusResponse {
  /** The job was canceled: stop the engine and report /lease/canceled. */
  cancel: boolean;
}

/** POST /internal/v1/lease/logs (job token). */
export interface LogChunk {
  seq: number;
  /** Byte offset of this chunk in the job's log. */
  offset: number;
  text: string;
}

/**
 * What every call that ends a lease (/complete, /fail, /canceled, /release) may carry:
 * the attempt's last log chunk, appended with the ending in the same D1 batch, so a
 * job's end costs the agent one request, not a log flush and then a report. A chunk
 * that is not the next one is dropped (the ending still applies).
 */
export interface LeaseEnding {
  log?: LogChunk;
}

/** A job's own input files up to this size come with its claim (ClaimedJob.inline_artifacts). */
export const MAX_INLINE_ARTIFACT_BYTES = 64 * 1024;

/** Results up to this size (bytes of JSON text, all together) ride inline with /complete instead of a PUT of their own. */
export const MAX_INLINE_RESULT_BYTES = 1024 * 1024;

/**
 * POST /internal/v1/lease/complete (job token); the fields of the job's kind. Answers
 * {status: 'completed'}, {status: 'failed'} (a commit whose keys do not match its
 * config), or {status: 'canceled'} when the job was canceled first (the result is
 * dropped). /fail and /release answer {status: 'canceled'} in that case too.
 */
export type CompleteRequest = (
  | { kind: 'commit'; app_exe_commit: string; app_vm_commit: string }
  | { kind: 'proof'; proofs: ProofType[]; public_values: string | null; metrics: EngineMetrics }
  | { kind: 'verify'; verified: boolean; reason: string | null }
  | { kind: 'execute'; exit_code: number; public_values: string | null; error: string | null; metrics: EngineMetrics }
) &
  LeaseEnding & {
    /**
     * Result files sent inline (JSON text, MAX_INLINE_RESULT_BYTES together at most)
     * rather than by PUT /lease/results/{name} first; either way each result the
     * kind needs must be there when the job completes.
     */
    results?: Partial<Record<ResultName, string>>;
    /**
     * The claim the agent would make next with the slot this job frees (its GPUs and the
     * agent's idle ones): the service makes it in this call, for the agent token that
     * claimed this lease, and answers with its job (CompleteResponse.next): a backlog
     * costs no claim request of its own per job. Absent: no claim (the agent is shutting down).
     */
    next_claim?: NextClaim;
  };

/** A claim made with a completion: a claim without a queue notice, for the agent that holds the lease. */
export type NextClaim = Omit<ClaimRequest, 'hint_job_id'>;

/**
 * POST /internal/v1/lease/complete's answer. `next`: the job the completion's next_claim
 * claimed, null when there was none for the agent; absent when no claim was made or it
 * failed (none asked, an older service, the agent's claims over their rate budget or
 * refused, a repeat of a call already answered): the agent then claims by itself. A job
 * claimed for an answer that was lost expires with its lease and goes back to the queue,
 * as a claim's whose answer was lost does.
 */
export interface CompleteResponse {
  status: 'completed' | 'failed' | 'canceled';
  next?: ClaimedJob | null;
}

/** POST /internal/v1/lease/fail (job token). */
export interface FailRequest extends LeaseEnding {
  error: string;
  /** True for the agent's own trouble (disk, tool crash): the job may run again elsewhere. */
  retryable: boolean;
  /** The job reached its cycle limit (ClaimedJob.cycle_limit): the figure it reached; the service words the error and charges the run so far. */
  limit?: LimitReached;
}

/** A limit a job reached, as the engine measured it. */
export interface LimitReached {
  name: 'cycle_limit';
  reached: number;
}

/**
 * GET /internal/v1/configs/{id} (agent token, or a publisher token scoped to the
 * config): a config as the fleet needs it to prepare a host (`prover-agent
 * setup-config`). The service is the one source of a config's openvm.toml; null
 * when the config has none (dev engine configs). `keys`: the current published
 * version of each key, whose digest an agent checks its own key files against
 * before proving with them (engine/openvm/key-digests.ts).
 */
export interface FleetConfig extends EngineConfig {
  active: boolean;
  openvm_toml: string | null;
  keys: PublishedKeys;
}

/**
 * Key files an operator publishes for a config, served to API callers as
 * GET /v1/configs/{id}/pk/{app|agg|halo2} and /vk/{app|agg} (`{download_url,
 * sha256, version, size}`), and `evm_verifier` as GET /v1/configs/{id}/evm_verifier,
 * each with its digest. Which file of the zkVM tool each name is belongs to the
 * engine's mapping.
 *
 * Keys are gigabytes and a Worker request body is capped (100 MB on most plans), so
 * a key is uploaded in parts over several requests (an R2 multipart upload), all
 * with a publisher token (never an agent token: 401):
 *   POST   /internal/v1/configs/{id}/keys/{name}/uploads  KeyUploadStart        → KeyUploadStarted
 *          409 when the key is published and `supersedes` does not name its current version
 *   PUT    /internal/v1/configs/{id}/keys/{name}/uploads/{upload_id}/{n}  body: part n (1-based) → KeyUploadPart
 *          every part but the last exactly `part_size` bytes; Content-Length required
 *   POST   /internal/v1/configs/{id}/keys/{name}/uploads/{upload_id}/complete  KeyUploadComplete → PublishKeyResponse
 *          422 when the bytes' SHA-256 is not the declared one (nothing is published)
 *   DELETE /internal/v1/configs/{id}/keys/{name}/uploads/{upload_id}      aborts
 * A key becomes a new version only at `complete`; no version is ever overwritten.
 */
// PUBLISHED_KEY_NAMES, PublishedKey: ./protocol/keys.ts.
export interface KeyUploadStart {
  /** SHA-256 (hex) of the whole file, checked at `complete`. */
  sha256: string;
  /**
   * The version this upload replaces, when the key is published already: an explicit,
   * audited supersede. Without it publishing an already published key is refused.
   */
  supersedes?: number;
}
export interface KeyUploadStarted {
  upload_id: string;
  part_size: number;
}
export interface KeyUploadPart {
  part_number: number;
  etag: string;
}
export interface KeyUploadComplete {
  parts: KeyUploadPart[];
}
export interface PublishKeyResponse extends PublishedKey {
  name: PublishedKeyName;
  /** Whether the service hashed the stored bytes itself (keys over its limit are the publisher's word, and each agent's check). */
  verified: boolean;
  /** The version it replaced; null for a first publication. */
  supersedes: number | null;
}
export * from './protocol/dev-proofs.ts';
