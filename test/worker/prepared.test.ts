// Prepared statements (src/db/prepared.ts) answer what the same statement built plainly
// answers: their values filled in by placeholder, and a plain select's rows mapped by a
// plan made once (selectMapper) with drizzle's own decoders, nulls and all. A statement
// the plan does not cover (a join's nested fields) keeps drizzle's mapper.
import { env } from 'cloudflare:test';
import { eq, getTableColumns, sql } from 'drizzle-orm';
import { beforeEach, describe, expect, it } from 'vitest';
import { batchByName } from '../../src/db/batch.ts';
import { openDb } from '../../src/db/client.ts';
import { prepared, type Placeholders } from '../../src/db/prepared.ts';
import { jobs, proofs } from '../../src/db/schema.ts';
import type { Db } from '../../src/db/client.ts';
import { drainQueuedJobs } from './fleet-helpers.ts';
import { seedTenant } from './helpers.ts';
import { readyProgram, succeededProof } from './run-helpers.ts';

beforeEach(drainQueuedJobs);

/** A select of every kind of field: columns in json, boolean, number and text mode, SQL with and without mapWith, a NULL. */
const flat = (db: Db, program: string) =>
  db
    .select({
      ...getTableColumns(proofs),
      file_count: sql<number>`json_array_length(${proofs.proof_files})`.mapWith(Number).as('file_count'),
      cancel_requested: jobs.cancel_requested,
      nothing: sql<string | null>`NULL`.as('nothing'),
    })
    .from(proofs)
    .innerJoin(jobs, eq(jobs.subject_id, proofs.id))
    .where(eq(proofs.program_id, program))
    .orderBy(proofs.created_at);

/** The same rows with a table's fields nested (a join's shape): drizzle's own mapper. */
const nested = (db: Db, program: string) =>
  db
    .select({ proof: proofs, job: { id: jobs.id, cancel_requested: jobs.cancel_requested } })
    .from(proofs)
    .innerJoin(jobs, eq(jobs.subject_id, proofs.id))
    .where(eq(proofs.program_id, program));

const flatPrepared = prepared((db, p: Placeholders<{ program: string }>) => flat(db, p.program));
const nestedPrepared = prepared((db, p: Placeholders<{ program: string }>) => nested(db, p.program));

describe('a prepared statement', () => {
  it('answers the rows the plain statement answers: in a batch and alone, decoded by their columns', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    await succeededProof(t, program);
    await succeededProof(t, program);
    const db = openDb(env.DB);

    const plain = await batchByName(db, { flat: flat(db, program), nested: nested(db, program) });
    expect(plain.flat).toHaveLength(2);
    // What the decoders make, so that a mapper that skipped them would fail here.
    expect(plain.flat[0]).toMatchObject({ proof_files: expect.any(Array), child_proof_keys: [], cancel_requested: false, nothing: null });
    expect(typeof plain.flat[0].file_count).toBe('number');

    const batched = await batchByName(db, { flat: flatPrepared(db, { program }), nested: nestedPrepared(db, { program }) });
    expect(batched).toEqual(plain);
    expect(await flatPrepared(db, { program }).all()).toEqual(plain.flat);
    // Alone, rows come as arrays: the two tables' `id`s stay apart (a batch's rows, keyed by name, merge them: drizzle's own loss).
    expect(await nestedPrepared(db, { program }).all()).toEqual(await nested(db, program));
  });
});
