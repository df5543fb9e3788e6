import { env } from 'cloudflare:test';
import { eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { batchByName } from '../../src/db/batch.ts';
import { openDb } from '../../src/db/client.ts';
import { organizations } from '../../src/db/schema.ts';
import { seedTenant } from './helpers.ts';

describe('batchByName', () => {
  it('answers each statement by its name, groups as lists and skipped steps as undefined', async () => {
    const t = await seedTenant();
    const db = openDb(env.DB);
    const org = (id: string) => db.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, id));
    const r = await batchByName(db, {
      first: db.select({ n: sql<number>`1` }).from(sql`(SELECT 1)`),
      skipped: undefined,
      group: [org(t.orgId), org('nobody')],
      empty: [],
      last: db.select({ n: sql<number>`3` }).from(sql`(SELECT 1)`),
    });
    expect(r.first).toEqual([{ n: 1 }]);
    expect(r.skipped).toBeUndefined();
    expect(r.group).toEqual([[{ id: t.orgId }], []]);
    expect(r.empty).toEqual([]);
    expect(r.last).toEqual([{ n: 3 }]);
  });

  it('runs in order in one transaction: a later statement sees an earlier write, and a failure undoes both', async () => {
    const t = await seedTenant();
    const db = openDb(env.DB);
    const { read } = await batchByName(db, {
      write: db.update(organizations).set({ last_claimed_at: 42 }).where(eq(organizations.id, t.orgId)),
      read: db.select({ at: organizations.last_claimed_at }).from(organizations).where(eq(organizations.id, t.orgId)),
    });
    expect(read).toEqual([{ at: 42 }]);
    await expect(
      batchByName(db, {
        write: db.update(organizations).set({ last_claimed_at: 7 }).where(eq(organizations.id, t.orgId)),
        broken: db.run(sql`SELECT * FROM no_such_table`),
      }),
    ).rejects.toThrow();
    expect(await db.select({ at: organizations.last_claimed_at }).from(organizations).where(eq(organizations.id, t.orgId))).toEqual([
      { at: 42 },
    ]);
  });

  it('answers a part (a record under one name) by its own names, its statements where it stands', async () => {
    const t = await seedTenant();
    const db = openDb(env.DB);
    const r = await batchByName(db, {
      write: db.update(organizations).set({ last_claimed_at: 9 }).where(eq(organizations.id, t.orgId)),
      part: {
        read: db.select({ at: organizations.last_claimed_at }).from(organizations).where(eq(organizations.id, t.orgId)),
        none: undefined,
        pair: [db.select({ n: sql<number>`1` }).from(sql`(SELECT 1)`), db.select({ n: sql<number>`2` }).from(sql`(SELECT 1)`)],
      },
      after: db
        .update(organizations)
        .set({ last_claimed_at: 10 })
        .where(eq(organizations.id, t.orgId))
        .returning({ at: organizations.last_claimed_at }),
    });
    expect(r.part.read).toEqual([{ at: 9 }]);
    expect(r.part.none).toBeUndefined();
    const [one, two] = r.part.pair;
    expect([one, two]).toEqual([[{ n: 1 }], [{ n: 2 }]]);
    expect(r.after).toEqual([{ at: 10 }]);
  });

  it('makes no round trip for a record with nothing to run', async () => {
    expect(await batchByName(openDb(env.DB), { a: undefined, b: [] })).toEqual({ a: undefined, b: [] });
  });
});
