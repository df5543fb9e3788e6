// What a job is, as both sides of the fleet protocol name it: its kind, the proofs it
// makes, the phases a proof goes through, the config it runs under, the metrics an
// engine reports, and the names of the files a claim hands over. Declared once here;
// the Worker (its schema, claims and routes) and the agent (its job runner and
// engines) import them through `prover-agent/protocol`.

/** Kinds of job the fleet runs; each has a contract module on either side (src/jobs/kinds/, prover-agent/src/agent/kinds/). */
export const JOB_KINDS = ['commit', 'proof', 'verify', 'execute'] as const;
export type JobKind = (typeof JOB_KINDS)[number];

/** The proofs the service issues, the wire's `proof_type`. `app` is the inner (application) proof. */
export const PROOF_TYPES = ['app', 'stark', 'evm'] as const;
export type ProofType = (typeof PROOF_TYPES)[number];

/** The proofs a verification checks (a verify job's `verification.proof_type`). */
export type VerifiableProofType = Exclude<ProofType, 'app'>;

/**
 * The phases of a running proof, in order (interface section 3): what an engine
 * announces while proving, what a heartbeat carries, and the proof record's states
 * between Queued and its end (src/db/schema.ts PROOF_STATES).
 */
export const PROVE_PHASES = ['Executing', 'Executed', 'AppProving', 'AppProvingDone', 'PostProcessing'] as const;
export type ProvePhase = (typeof PROVE_PHASES)[number];

/** What the service knows about the config a job runs under. */
export interface EngineConfig {
  id: string; // cfg_{ulid}
  engine: string; // an engine of ENGINES (engines.ts)
  openvm_version: string;
  stark_backend_version: string;
  app_vm_commit: string; // 0x-prefixed 32-byte hex
  deferral_enabled: boolean;
  /** Size of the public-values space in bytes (8 x a power of two); default 32. */
  public_values_bytes: number;
}

/** Metrics an engine reports; every field optional, the runner forwards what it gets. */
export interface EngineMetrics {
  num_instructions?: number;
  cells_used?: number;
  num_segments?: number;
  total_cycle?: number;
  total_tick?: number;
}

/**
 * A proof's deferred child proofs among its claim's input files (ClaimedJob.artifacts,
 * GET /lease/artifacts/{name}): they come last, as child-0, child-1, ... in packing order.
 */
export const CHILD_PROOF_PREFIX = 'child-';
export const childProofArtifact = (index: number) => `${CHILD_PROOF_PREFIX}${index}`;
export const isChildProofArtifact = (name: string) => name.startsWith(CHILD_PROOF_PREFIX);

/** Result names for PUT /internal/v1/lease/results/{name} and CompleteRequest.results: a commit's baseline, a proof's file. */
export type ResultName = 'baseline' | ProofType;
