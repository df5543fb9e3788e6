// R2 object keys. Plain functions with no Workers types, so the operator command
// (Node) names the same objects as the Worker.
import { sql, type SQL, type SQLWrapper } from 'drizzle-orm';
import type { PublishedKeyName } from 'prover-agent/protocol';

/** R2 keys, in one place so the layout is readable. */
export const artifactKey = {
  programElf: (programId: string) => `programs/${programId}/program.elf`,
  programVmexe: (programId: string) => `programs/${programId}/program.vmexe`,
  /** Where commits wrote a program's baseline before migrations/0022_results.sql; such programs' baseline_key still names it. Nothing writes it any more. */
  programBaseline: (programId: string) => `programs/${programId}/baseline.json`,
  proofInput: (proofId: string) => `proofs/${proofId}/input.json`,
  proofChild: (proofId: string, index: number) => `proofs/${proofId}/children/${String(index).padStart(4, '0')}.json`,
  /** Where proof files were served from before migrations/0022_results.sql (a proof whose proof_objects is null). Nothing writes it any more. */
  proofOutput: (proofId: string, kind: string) => `proofs/${proofId}/${kind}-proof.json`,
  /**
   * One object an attempt wrote for its job's results (src/jobs/results.ts): a result an
   * agent uploaded or sent inline, a dev proof the Worker sealed. Its own key, written
   * once by the request that recorded it, never by anyone else; served only once a
   * completion names it on its record (proofs.proof_objects, programs.baseline_key).
   */
  resultUpload: (jobId: string, uploadId: string, name: string) => `results/${jobId}/${uploadId}/${name}.json`,
  /** Every result upload of a job (the per-job prefix under which resultUpload writes). */
  resultUploadPrefix: (jobId: string) => `results/${jobId}/`,
  executionInput: (executionId: string) => `executions/${executionId}/input.json`,
  verificationProof: (verificationId: string) => `verifications/${verificationId}/proof.json`,
  /**
   * Every object of a record lives under this prefix (its input, child proofs, each
   * attempt's results, an ELF, VMEXE and baseline, an uploaded proof): a deletion lists
   * it and deletes what it finds, named in a row or not (src/features/retention/copies.ts).
   */
  recordPrefix: (kind: 'proof' | 'execution' | 'program' | 'verification', id: string) => `${kind}s/${id}/`,
  /** A chunk of a job's log: a host's (an agent's) text, or a line the service wrote (src/jobs/logs.ts). */
  jobLogChunk: (jobId: string, seq: number, source: 'host' | 'service' = 'host') =>
    `logs/${jobId}/${String(seq).padStart(8, '0')}${source === 'service' ? '.service' : ''}`,
  jobLogPrefix: (jobId: string) => `logs/${jobId}/`,
  /**
   * A part a stage of a log's compaction wrote (src/jobs/logs.ts): part `index` of level
   * `level` (level 1 joins chunks, level 2 joins level-1 parts, ...). Under jobLogPrefix,
   * after every chunk (`p` sorts after digits), so a purge's listing of the log finds them.
   */
  jobLogPart: (jobId: string, level: number, index: number) => `logs/${jobId}/p${level}-${String(index).padStart(6, '0')}`,
  /** A finished job's whole log in one object (src/jobs/logs.ts compactJobLog); outside jobLogPrefix, so a listing of chunks never meets it. */
  jobLogCompacted: (jobId: string) => `logs/${jobId}.log`,
  /** An archive object: finished records moved out of D1 (src/features/retention/archive.ts), NDJSON, one per organization, kind, day and batch. */
  archiveObject: (orgId: string, kind: 'proof' | 'execution', day: string, objectId: number) =>
    `archive/${orgId}/${kind}s/${day}/${String(objectId).padStart(10, '0')}.ndjson`,
  /**
   * One upload of a key file of a config: its own object, never overwritten. It is
   * served only once D1 records it as a published version (src/features/configs/keys.ts);
   * until then (or when refused) it is a staging object nothing reads.
   */
  configKeyUpload: (configId: string, name: PublishedKeyName, uploadId: string) => `configs/${configId}/keys/${name}/${uploadId}`,
};

/**
 * One of the keys above as SQL over columns: `keySql(artifactKey.proofInput, proofs.id)`
 * is `'proofs/' || proofs.id || '/input.json'`. A record whose objects sit at its own
 * keys stores none of them (migrations/0019_archive.sql): statements that hand them out
 * or purge them derive them, from the one layout above.
 */
export function keySql(key: (...args: string[]) => string, ...args: SQLWrapper[]): SQL<string> {
  const marks = args.map((_, i) => `\u0000${i}\u0000`);
  const parts = key(...marks).split(/\u0000(\d+)\u0000/);
  // split() with a capture group alternates literal text (a string literal, not a bound
  // parameter: D1 binds at most 100 a statement) and an argument's index.
  const chunks = parts.map((part, i) => (i % 2 === 0 ? sql.raw(`'${part.replaceAll("'", "''")}'`) : sql`${args[Number(part)]}`));
  return sql<string>`(${sql.join(chunks, sql` || `)})`;
}

/** A proof's row as far as its files go. */
type ProofFiles = { id: string; proof_files: readonly string[]; proof_objects: Readonly<Record<string, { key: string }>> | null };

/**
 * The key proof file `kind` of a proof is served from, or null when it has none: the
 * object its completion named (proof_objects), or, for a proof finished before
 * migrations/0022_results.sql, its fixed key. Every reader of a proof file asks here.
 */
export function servedProofKey(proof: ProofFiles, kind: string): string | null {
  if (!proof.proof_files.includes(kind)) return null;
  return proof.proof_objects?.[kind]?.key ?? artifactKey.proofOutput(proof.id, kind);
}
