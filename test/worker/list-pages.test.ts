// A page of a program's runs is read in the page's order from its index, LIMIT ending the
// read: no sort of all the program's (or the organization's) rows, each computed whole
// (a queued run's estimate among its columns) before one page is kept. Asserted on the
// query plan SQLite makes for the statement the route runs (migrations/0027_list_pages.sql).
import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/db/client.ts';
import { programExecutions } from '../../src/features/executions/data.ts';
import { programProofs } from '../../src/features/proofs/data.ts';

async function planOf(query: { toSQL(): { sql: string; params: unknown[] } }): Promise<string[]> {
  const { sql, params } = query.toSQL();
  const plan = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`)
    .bind(...params)
    .all<{ detail: string }>();
  return plan.results.map((r) => r.detail);
}

describe('a page of a program’s runs', () => {
  const db = openDb(env.DB);
  it.each([
    ['proofs', programProofs(db, 'org_x', 'program_x', 3, 20).rows],
    ['executions', programExecutions(db, 'org_x', 'program_x', 3, 20).rows],
  ])('of %s is read from the program’s index in the page’s order: nothing sorted', async (table, rows) => {
    const plan = await planOf(rows);
    expect(plan[0]).toMatch(new RegExp(`^SEARCH ${table} USING INDEX ${table}_program \\(program_id=\\?\\)`));
    expect(plan.filter((d) => /TEMP B-TREE/.test(d))).toEqual([]);
  });
});
