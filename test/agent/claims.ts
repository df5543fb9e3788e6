// Claimed jobs as the service's claims answer them, for the agent's tests.
import type { ClaimedJob } from '../../prover-agent/src/protocol.ts';

/** A dev-engine config as a claim hands it over. */
export const config = {
  id: 'cfg_1',
  engine: 'dev',
  openvm_version: '2.0.1',
  stark_backend_version: '2.0.0',
  app_vm_commit: '0x' + '11'.repeat(32),
  deferral_enabled: true,
  public_values_bytes: 32,
};

/** A claimed job of `kind`; watch intervals long enough that no heartbeat or status check happens unless a test asks. */
export function claim(kind: ClaimedJob['kind'], over: Partial<ClaimedJob> = {}): ClaimedJob {
  return {
    id: `job-${kind}`,
    kind,
    subject_id: `subject-${kind}`,
    attempt: 1,
    lease_id: 'lease-1',
    job_token: 'jt_1',
    lease_expires_at: Date.now() + 12_000,
    heartbeat_interval_ms: 60_000,
    cancel_check_interval_ms: 60_000,
    num_gpus: 0,
    priority: 5,
    config,
    program: { id: 'prog-1', app_exe_commit: '0x' + '22'.repeat(32) },
    proof: null,
    execution: null,
    verification: null,
    artifacts: [],
    shared_artifacts: {},
    inline_artifacts: {},
    log: { seq: 3, offset: 100 },
    ...over,
  };
}
