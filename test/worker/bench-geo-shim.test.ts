// The D1 latency shim of `npm run bench:geo` (bench-only code, test/bench/geo/worker/):
// its routing model, its round-trip counting, and drizzle running through it unchanged
// against the real local D1. The figures the bench prints rest on these.
import { env } from 'cloudflare:test';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/db/client.ts';
import { organizations } from '../../src/db/schema.ts';
import {
  BenchDatabase,
  counts,
  isReadOnlyStatement,
  placeOfCall,
  RequestTally,
  resetCounts,
  type Scope,
} from '../bench/geo/worker/d1-shim.ts';

describe('bench:geo D1 shim', () => {
  it('tells read-only statements from writes', () => {
    for (const sql of [
      'select 1',
      '  SELECT * FROM jobs',
      '-- why\n/* note */ select 1',
      'WITH x AS (SELECT 1) SELECT * FROM x',
      'PRAGMA table_info(jobs)',
    ])
      expect(isReadOnlyStatement(sql), sql).toBe(true);
    for (const sql of [
      'insert into jobs values (1)',
      'UPDATE jobs SET x = 1',
      'delete from jobs',
      'REPLACE INTO jobs VALUES (1)',
      'WITH x AS (SELECT 1) INSERT INTO jobs SELECT * FROM x',
      'PRAGMA foreign_keys = ON',
      'CREATE TABLE t (x)',
    ])
      expect(isReadOnlyStatement(sql), sql).toBe(false);
  });

  it('routes writes and plain reads to the primary, session reads to a replica', () => {
    expect(placeOfCall(['UPDATE jobs SET x = 1'], null).place).toBe('primary');
    expect(placeOfCall(['SELECT 1'], null).place).toBe('primary');
    expect(placeOfCall(['SELECT 1', 'UPDATE jobs SET x = 1'], { start: 'first-unconstrained', calls: 3 })).toEqual({
      place: 'primary',
      write: true,
    });
    expect(placeOfCall(['SELECT 1'], { start: 'first-unconstrained', calls: 0 }).place).toBe('replica');
    expect(placeOfCall(['SELECT 1'], { start: 'bookmark', calls: 0 }).place).toBe('replica');
    expect(placeOfCall(['SELECT 1'], { start: 'first-primary', calls: 0 }).place).toBe('primary');
    expect(placeOfCall(['SELECT 1'], { start: 'first-primary', calls: 1 }).place).toBe('replica');
  });

  it('runs drizzle through the shim and counts the round trips a request waits for', async () => {
    resetCounts();
    const tally = new RequestTally();
    const scope: Scope = { tally, emulation: false, latency: { primaryMs: 0, replicaMs: 0 } };
    const shim = new BenchDatabase(env.DB, scope) as unknown as D1Database;
    const db = openDb(shim);
    const id = `org_bench_geo_${crypto.randomUUID()}`;
    const mine = eq(organizations.id, id);
    try {
      await db.insert(organizations).values({ id, name: 'bench-geo' }); // 1: primary write
      const [one, all] = await Promise.all([
        db.select().from(organizations).where(mine).get(),
        db.select({ id: organizations.id }).from(organizations).where(mine),
      ]); // 2: two plain reads at once
      expect(one?.name).toBe('bench-geo');
      expect(all).toEqual([{ id }]);
      const [, renamed] = await db.batch([
        db.update(organizations).set({ name: 'renamed' }).where(mine),
        db.select().from(organizations).where(mine),
      ]); // 3: a writing batch
      expect(renamed[0]?.name).toBe('renamed');
      // Off the response path: handed to waitUntil in the same turn.
      const touch = db.update(organizations).set({ share_weight: 2 }).where(mine).run();
      tally.deferCurrentTurn();
      await touch;
      const session = shim.withSession('first-primary');
      // drizzle needs only prepare and batch, which a session has (openDb is typed for the binding).
      const sdb = openDb(session);
      expect((await sdb.select().from(organizations).where(mine).get())?.share_weight).toBe(2); // 4: first call of a first-primary session
      expect(await sdb.select({ n: organizations.name }).from(organizations).where(mine).all()).toEqual([{ n: 'renamed' }]); // 5: replica
      expect(typeof session.getBookmark()).toBe('string');
      expect(
        await openDb(shim.withSession(session.getBookmark()!) as unknown as D1Database)
          .select({ id: organizations.id })
          .from(organizations)
          .where(mine)
          .all(),
      ).toEqual([{ id }]); // 6: replica

      expect(tally.close(scope.latency)).toEqual({ primarySeq: 4, replicaSeq: 2, primaryCalls: 5, replicaCalls: 2, calls: 7, offPath: 1 });
      expect(counts.product).toEqual({
        reads: { primary: 4, replica: 2 }, // two plain reads, the batch's read, the session's first
        writes: { primary: 3, replica: 0 }, // insert, the batch's update, the touch
        calls: { primary: 6, replica: 2 },
      });
    } finally {
      await env.DB.prepare('DELETE FROM organizations WHERE id = ?').bind(id).run();
    }
  });
});
