// Proof jobs: a proof of a program's run on an input (and its deferred child proofs).
// The subject is the proof; its running states are the protocol's PROVE_PHASES, which
// heartbeats move forward (src/jobs/state.ts heartbeat).
//
//   queued   leased (running)                                          done
//   Queued   Executing → Executed → AppProving → AppProvingDone →      Succeeded | Failed
//            PostProcessing                                            | Canceled (via Canceling)
import { and, eq, inArray, sql, type SQL } from 'drizzle-orm';
import { CHILD_PROOF_PREFIX, GPU_LESS_ENGINE_NAMES, isChildProofArtifact, PROOF_TYPES, PROVE_PHASES } from 'prover-agent/protocol';
import { PROOF_TERMINAL_STATES } from '../../db/enums.ts';
import { batchByName } from '../../db/batch.ts';
import { preparedSteps, type Placeholders } from '../../db/prepared.ts';
import { configs, jobs, leases, programs, proofs, type ServedObject } from '../../db/schema.ts';
import { reserveByToken, tokenReservation } from '../results.ts';
import { sealDevProofs, type DevProofSource } from '../dev-proofs.ts';
import { artifactKey, keySql } from '../../lib/artifact-keys.ts';
import { ApiError } from '../../lib/errors.ts';
import { isProgramFile } from './commit.ts';
import { updateSubjects, type Claimed, type ColumnsOf, type JobKindContract, type SubjectStates } from './contract.ts';

/** How a proof ends (declared with the schema's states, which the console bundles too). */
export { PROOF_TERMINAL_STATES };

export interface ProofDone {
  /** Each proof file the proof serves, by kind: this attempt's own object and its digest (src/jobs/results.ts). */
  proofObjects: Record<string, ServedObject>;
  proofSize: number;
  num_instructions: number | null;
  cells_used: number;
}

const subject: SubjectStates = {
  table: proofs,
  queued: { state: 'Queued' },
  running: (now, machineType) => ({
    state: 'Executing',
    launched_at: sql`coalesce(${proofs.launched_at}, ${now})`,
    machine_type: machineType,
  }),
  failed: (now, message) => ({ state: 'Failed', error_message: message, terminated_at: now }),
  canceled: (now, cost) => ({ state: 'Canceled', terminated_at: now, cost }),
  active: inArray(proofs.state, ['Queued', ...PROVE_PHASES, 'Canceling']),
};

/** What a completion reads: the proof, and what a dev proof's seal states (its program's commit, its config). */
type CompletionReads = {
  proof: (typeof proofs.$inferSelect)[];
  program: { app_exe_commit: string | null }[];
  config: (typeof configs.$inferSelect)[];
};

/** What a completion reads when it has no opening (src/db/prepared.ts). */
const completionReads = preparedSteps(
  () => '',
  (db, p: Placeholders<{ proofId: string; configId: string }>) => ({
    proof: db.select().from(proofs).where(eq(proofs.id, p.proofId)),
    program: db
      .select({ app_exe_commit: programs.app_exe_commit })
      .from(programs)
      .where(sql`${programs.id} = (SELECT ${proofs.program_id} FROM ${proofs} WHERE ${proofs.id} = ${p.proofId})`),
    config: db.select().from(configs).where(eq(configs.id, p.configId)),
  }),
);

/** An opening's values: the job token's hash, when, and the ids of the rows it reserves (id0, id1, …, by `names`). */
type OpeningValues = { [value: string]: unknown; hash: string; now: number; names: string[] };

/**
 * A completion's opening (CompletionOpening), built once per set of proof types reported:
 * the proof, its program's commit and its config, found from the job token, and, for a dev
 * proof, the rows of the sealed proofs it will store (reserveByToken), written only while
 * the token's lease is its job's current one.
 */
const openingSteps = preparedSteps(
  (v: OpeningValues & { live: SQL }) => v.names.join(','),
  (db, p, v) => {
    const jobOfToken = sql`(SELECT ${leases.job_id} FROM ${leases} WHERE ${leases.token_hash} = ${p.hash} AND ${v.live})`;
    const proofOfToken = sql`(SELECT ${jobs.subject_id} FROM ${jobs} WHERE ${jobs.id} = ${jobOfToken} AND ${jobs.kind} = 'proof')`;
    const currentDevJob = sql`${leases.outcome} IS NULL AND EXISTS (SELECT 1 FROM ${jobs} WHERE ${jobs.id} = ${leases.job_id}
      AND ${jobs.lease_id} = ${leases.id} AND ${jobs.status} = 'leased' AND ${jobs.kind} = 'proof' AND ${jobs.engine} = 'dev')`;
    return {
      proof: db
        .select()
        .from(proofs)
        .where(sql`${proofs.id} = ${proofOfToken}`),
      program: db
        .select({ app_exe_commit: programs.app_exe_commit })
        .from(programs)
        .where(sql`${programs.id} = (SELECT ${proofs.program_id} FROM ${proofs} WHERE ${proofs.id} = ${proofOfToken})`),
      config: db
        .select()
        .from(configs)
        .where(sql`${configs.id} = (SELECT ${jobs.config_id} FROM ${jobs} WHERE ${jobs.id} = ${jobOfToken})`),
      sealed: reserveByToken(
        db,
        { ofToken: sql`${leases.token_hash} = ${p.hash} AND ${v.live}`, current: currentDevJob },
        v.names.map((name, i) => ({ id: p[`id${i}`] as string, name })),
        p.now,
      ),
    };
  },
);

/** The result name of a dev proof of `type` once the Worker sealed it (an object of the attempt's own). */
const sealedName = (type: string) => `${type}.sealed`;

export const proofJob: JobKindContract<'proof', ProofDone, typeof proofs.$inferSelect> = {
  kind: 'proof',
  subjectNoun: 'proof',
  subject,
  claim: {
    programId: ({ subject: proof }: Claimed<ColumnsOf<typeof proofs>>) => sql`${proof.program_id}`,
    // The deferred children come last, as child-0, child-1, ... (protocol childProofArtifact).
    inputs: ({ program, subject: proof }: Claimed<ColumnsOf<typeof proofs>>) =>
      sql`json_patch(json_object('elf', ${program.elf_key}, 'vmexe', ${program.vmexe_key}, 'input', ${keySql(artifactKey.proofInput, proof.id)}, 'baseline', ${program.baseline_key}), coalesce((SELECT json_group_object(${sql.raw(`'${CHILD_PROOF_PREFIX}'`)} || child.key, child.value) FROM json_each(${proof.child_proof_keys}) child), '{}'))`,
    isShared: (name) => isProgramFile(name) || isChildProofArtifact(name),
    // Once it runs, a proof's num_gpus says the GPUs it uses (GPU-less engines keep what was asked).
    alsoOnClaim: (db, mine) => [
      updateSubjects(db, proofJob, and(mine, sql`NOT ${inArray(jobs.engine, [...GPU_LESS_ENGINE_NAMES])}`), {
        num_gpus: sql`(SELECT ${jobs.gpus_used} FROM ${jobs} WHERE ${mine})`,
      }),
    ],
    subject: {
      table: proofs,
      describe: (proof) => ({ proof: { proof_type: proof.proof_type, num_children: proof.child_proof_keys.length } }),
    },
  },
  results: PROOF_TYPES,
  async completion({ db, job, results, artifacts, devProofSecret, opened }, report) {
    // What the callback's first batch read (the opening), or one round trip now: the proof
    // and, for a dev proof, what its seal states (its program's commit, its config), with the
    // rows of the sealed proofs it will store (src/jobs/results.ts reserve).
    const dev = job.engine === 'dev';
    const reads = completionReads(db, { proofId: job.subject_id, configId: job.config_id });
    const read =
      (opened as CompletionReads | undefined) ??
      (dev
        ? await batchByName(db, { ...reads, sealed: results.reserve([...new Set(report.proofs)].map(sealedName)) })
        : { proof: await reads.proof.all(), program: [], config: [] });
    const proof = read.proof[0];
    const files = [];
    for (const type of report.proofs) {
      const file = await results.get(type);
      if (!file) throw new ApiError(400, `Upload the ${type} proof before completing`);
      files.push({ type, file });
    }
    if (!files.some((f) => f.type === proof.proof_type)) throw new ApiError(400, `The job asked for a ${proof.proof_type} proof`);
    const proofObjects: Record<string, ServedObject> = {};
    let size = 0;
    if (dev) {
      // The host's dev engine wrote them unsealed: sealed here, with the secret only the
      // Worker holds, into objects of the attempt's own (the host's files stay as they came).
      if (!devProofSecret) return { fail: 'This deployment has no DEV_PROOF_SECRET: dev proofs cannot be sealed' };
      const [program, config] = [read.program[0], read.config[0]];
      if (!program?.app_exe_commit || !config) return { fail: 'The proof’s program or config is gone' };
      const sources: Record<string, DevProofSource> = Object.fromEntries(
        files.map(({ type, file }) => [type, 'text' in file ? { text: file.text } : { key: file.upload.key }]),
      );
      const sealed = await sealDevProofs(
        artifacts,
        sources,
        { appExeCommit: program.app_exe_commit, config, publicValues: report.public_values, childKeys: proof.child_proof_keys },
        devProofSecret,
      );
      if ('fail' in sealed) return sealed;
      for (const { type } of files) {
        const { key, sha256, size: bytes } = await results.accept(sealedName(type), { text: sealed.texts[type] });
        proofObjects[type] = { key, sha256 };
        if (type === proof.proof_type) size = bytes;
      }
    } else
      for (const { type, file } of files) {
        const { key, sha256, size: bytes } = await results.accept(type, file);
        proofObjects[type] = { key, sha256 };
        if (type === proof.proof_type) size = bytes;
      }
    return {
      done: {
        proofObjects,
        proofSize: size,
        num_instructions: report.metrics.num_instructions ?? null,
        cells_used: report.metrics.cells_used ?? 0,
        // Not stored: the proof files carry them (user_public_values), and no read serves
        // them from the record (docs/contributors.md "What D1 keeps, and past one database").
      },
    };
  },
  opening(db, byToken, report) {
    const reservation = tokenReservation([...new Set(report.proofs)].map(sealedName));
    const values: OpeningValues & { live: SQL } = {
      hash: byToken.hash,
      now: reservation.now,
      names: reservation.rows.map((r) => r.name),
      live: byToken.live,
      ...Object.fromEntries(reservation.rows.map((r, i) => [`id${i}`, r.id])),
    };
    return {
      steps: openingSteps(db, values),
      opened: (results, attempt, job) => {
        const { proof, program, config } = results as CompletionReads;
        // The rows were written with the batch only for a dev proof (and a current lease, which the route checked).
        if (job.engine === 'dev') attempt.adopt(reservation);
        return { proof, program, config } satisfies CompletionReads;
      },
    };
  },
  complete(db, mine, done, at) {
    const proofIds = db
      .select({ id: jobs.subject_id })
      .from(jobs)
      .where(and(mine, eq(jobs.kind, 'proof')));
    return [
      updateSubjects(db, proofJob, mine, {
        state: 'Succeeded',
        terminated_at: at.now,
        proof_files: Object.keys(done.proofObjects),
        proof_objects: done.proofObjects,
        proof_size: done.proofSize,
        num_instructions: done.num_instructions,
        cells_used: done.cells_used,
        cost: at.cost,
      }),
      db
        .update(programs)
        .set({
          proofs_run: sql`${programs.proofs_run} + 1`,
          cells_used: sql`${programs.cells_used} + ${done.cells_used}`,
          last_active_at: at.now,
        })
        .where(inArray(programs.id, db.select({ id: proofs.program_id }).from(proofs).where(inArray(proofs.id, proofIds)))),
    ];
  },
};
