// Deletion reaches every copy (issue 29 item 4; findings 4, 9, 10, 12): every record kind
// × every kind of copy its data has (src/features/retention/copies.ts COPIES), deleted
// every way a record is deleted (a caller's DELETE through /v1 and the console, the
// retention sweep, a program's deletion taking its verifications, a record already in the
// archive), each copy populated first and checked empty (or a tombstone) after, on the
// real local D1 and R2. The matrix it checked is printed at the end.
import { env } from 'cloudflare:test';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { createApiKey, revokeApiKeyById, setOrganizationRetention } from '../../src/admin/statements.ts';
import { sweepArchive } from '../../src/features/retention/archive.ts';
import { COPIES, COPY_KINDS, RECORD_KINDS, type CopyKind, type RecordKind } from '../../src/features/retention/copies.ts';
import { PURGE_SETTLE_MS, sweepPurges } from '../../src/features/retention/purge.ts';
import { sweepRetention } from '../../src/features/retention/sweep.ts';
import { artifactKey } from '../../src/lib/artifact-keys.ts';
import { as, seedUser, send, signIn, type Session } from './console-helpers.ts';
import { claimJob, drainQueuedJobs, lease, seedAgent } from './fleet-helpers.ts';
import { writeLongLog } from './log-helpers.ts';
import { api, countRows, cronPart, eventually, json, r2Keys, runAdmin, seedTenant, type Tenant } from './helpers.ts';
import { logCompacted, readyProgram, succeededExecution, succeededProof } from './run-helpers.ts';

beforeEach(drainQueuedJobs);

/** How a record is deleted. */
type Way = 'api' | 'console' | 'retention' | 'archived: api' | 'archived: console' | 'archived: retention' | 'with its program';

/** What the walk checked: record kind → way → copy kinds. */
const checked = new Map<RecordKind, Map<Way, Set<CopyKind>>>();
const check = (kind: RecordKind, way: Way, copy: CopyKind) => {
  const ways = checked.get(kind) ?? checked.set(kind, new Map()).get(kind)!;
  (ways.get(way) ?? ways.set(way, new Set()).get(way)!).add(copy);
};

const STARK = { version: 'v1.1', proof: 'abcd', user_pvs_proof: '0011', deferral_merkle_proofs: null };
const PUBLIC_VALUES = '0x5ec2e7';

interface Made {
  kind: RecordKind;
  id: string;
  /** Its job: the one whose log is the record's. */
  jobId: string;
  t: Tenant;
  /** A verification of it (a program's). */
  verification?: Made;
}

/** A finished verification of `program`, checked by an agent that logged as it went. */
async function verification(t: Tenant, program: string): Promise<Made> {
  const form = new FormData();
  form.append('proof', new File([JSON.stringify(STARK)], 'proof.json', { type: 'application/json' }));
  const { id } = await json<{ id: string }>(await api(t, `/v1/verify/stark?program_id=${program}`, { method: 'POST', body: form }), 200);
  const job = await claimJob(await seedAgent());
  await json(await lease(job, '/logs', { seq: 0, offset: 0, text: 'verifying\n' }), 200);
  await json(await lease(job, '/complete', { kind: 'verify', verified: true, reason: null }), 200);
  await logCompacted(job.id);
  return { kind: 'verification', id, jobId: job.id, t };
}

/**
 * A record of `kind` with every copy of its data there is: its row, its objects (and one
 * of an earlier attempt that no row names: the layout attempt-keyed uploads use), its
 * job's log, webhook deliveries about it (one delivered with its payload stored, one
 * pending a retry with it), and for a program a verification of it.
 */
async function make(kind: RecordKind, t: Tenant): Promise<Made> {
  let made: Made;
  if (kind === 'proof' || kind === 'execution') {
    const program = await readyProgram(t);
    const run = kind === 'proof' ? await succeededProof(t, program) : await succeededExecution(t, program);
    made = { kind, ...run, t };
    // What the caller stored in its row: public values (a proof's from before they moved to its files).
    await env.DB.prepare(`UPDATE ${kind}s SET public_values = ? WHERE id = ?`).bind(PUBLIC_VALUES, run.id).run();
  } else if (kind === 'program') {
    const id = await readyProgram(t);
    const job = await env.DB.prepare(`SELECT id FROM jobs WHERE kind = 'commit' AND subject_id = ?`).bind(id).first<{ id: string }>();
    await writeLongLog(job!.id, 3, (i) => `commit ${i}\n`.padEnd(10, '.'), true);
    made = { kind, id, jobId: job!.id, t, verification: await verification(t, id) };
  } else made = await verification(t, await readyProgram(t));
  for (const m of [made, made.verification]) if (m) await otherCopies(m);
  return made;
}

/** An object of an earlier attempt that no row names, and webhook deliveries about the record with its data in their payloads. */
async function otherCopies({ kind, id, t }: Made) {
  await env.ARTIFACTS.put(`${artifactKey.recordPrefix(kind, id)}attempt-0/result.json`, `{"public_values":"${PUBLIC_VALUES}"}`);
  const payload = JSON.stringify({ type: `${kind}.done`, data: { id, public_values: PUBLIC_VALUES } });
  for (const status of ['delivered', 'pending'])
    await env.DB.prepare(
      `INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_type, subject_kind, subject_id, status, attempts, next_attempt_at, payload)
       VALUES (?, ?, 'ep', ?, ?, ?, ?, 1, ?, ?)`,
    )
      .bind(`msg_${crypto.randomUUID().replaceAll('-', '')}`, t.orgId, `${kind}.done`, kind, id, status, Date.now() + 3_600_000, payload)
      .run();
}

/** Before deleting: every copy the walk checks is there (so the checks after can fail). */
async function expectCopies(m: Made) {
  expect((await r2Keys(artifactKey.recordPrefix(m.kind, m.id))).length).toBeGreaterThanOrEqual(2);
  expect((await r2Keys(`logs/${m.jobId}`)).length).toBeGreaterThanOrEqual(1);
  expect(await countRows('webhook_deliveries', 'subject_id = ? AND payload IS NOT NULL', m.id)).toBe(2);
}

/** The archive's lines of record `id`, across the organization's objects. */
async function archiveLines(orgId: string, id: string) {
  const lines: Record<string, unknown>[] = [];
  for (const key of await r2Keys(`archive/${orgId}/`)) {
    const text = await (await env.ARTIFACTS.get(key))!.text();
    for (const line of text.split('\n').filter(Boolean)) if (line.includes(id)) lines.push(JSON.parse(line) as Record<string, unknown>);
  }
  return lines;
}

/** How far ahead the archive's run goes (past ARCHIVE_AFTER_DAYS), and the retention's (past a one-day retention, after it). */
const ARCHIVE_LATER = 40 * 86_400_000;
const RETENTION_LATER = 2 * 86_400_000;
/** The purges' second pass runs later than any of them. */
const PURGE_LATER = ARCHIVE_LATER + RETENTION_LATER + PURGE_SETTLE_MS + 1000;

/** The purges' first pass ran (after the response, or in the sweep) and the sweep's second, settled, pass too. */
async function purgesDone(m: Made) {
  await eventually(async () => expect(await r2Keys(artifactKey.recordPrefix(m.kind, m.id))).toEqual([]));
  await sweepPurges(cronPart('retention'), Date.now() + PURGE_LATER);
  expect(await countRows('purges', 'subject_id = ?', m.id)).toBe(0);
}

/** Every copy of `m` is gone, or a tombstone, as COPIES says for its kind; deleted by `actor`. */
async function expectNothingLeft(m: Made, way: Way, actor: RegExp) {
  await purgesDone(m);
  for (const copy of COPIES[m.kind]) {
    switch (copy) {
      case 'row': {
        const row = way.startsWith('archived') ? null : await env.DB.prepare(`SELECT * FROM ${m.kind}s WHERE id = ?`).bind(m.id).first();
        const stub = await env.DB.prepare('SELECT * FROM archived WHERE id = ?').bind(m.id).first();
        const tombstone = (row ?? stub)!;
        expect(tombstone.deleted_at).toEqual(expect.any(String));
        expect(tombstone.deleted_by).toMatch(actor);
        if (row && 'public_values' in row) expect(row.public_values).toBeNull();
        break;
      }
      case 'objects':
        expect(await r2Keys(artifactKey.recordPrefix(m.kind, m.id))).toEqual([]);
        break;
      case 'log':
        expect(await r2Keys(`logs/${m.jobId}`)).toEqual([]); // its chunks and its compacted object (`logs/{job}.log`)
        expect(await countRows('job_log_chunks', 'job_id = ?', m.jobId)).toBe(0);
        break;
      case 'archive': {
        const lines = await archiveLines(m.t.orgId, m.id);
        if (way.startsWith('archived')) expect(lines).toHaveLength(1);
        for (const line of lines) {
          expect(line.deleted_at).toEqual(expect.any(String));
          expect(line.deleted_by).toMatch(actor);
          expect(JSON.stringify(line)).not.toContain(PUBLIC_VALUES);
        }
        break;
      }
      case 'deliveries':
        expect(
          await env.DB.prepare('SELECT payload, status, last_error FROM webhook_deliveries WHERE subject_id = ? ORDER BY status')
            .bind(m.id)
            .all()
            .then((r) => r.results),
        ).toEqual([
          { payload: null, status: 'delivered', last_error: null },
          { payload: null, status: 'failed', last_error: `Not sent: the ${m.kind} was deleted` },
        ]);
        break;
      case 'stream': {
        // A stream of it ends at once with its tombstone (it used to poll for 15 minutes: finding 12).
        const res = await api(m.t, `/v1/${m.kind}s/${m.id}/events`);
        if (way.startsWith('archived')) {
          expect(res.status).toBe(404); // an archived run has no stream (it ended long before)
          break;
        }
        expect(res.status).toBe(200);
        const text = await res.text();
        expect(text).toMatch(/^event: state$/m);
        expect(text).toContain('"deleted_at"');
        expect(text).not.toMatch(/^event: (log|reconnect)$/m);
        break;
      }
      case 'verifications':
        await expectNothingLeft(m.verification!, 'with its program', actor);
        break;
      case 'audit': {
        const entries = await env.DB.prepare('SELECT org_id, actor, action FROM audit_log WHERE target = ?').bind(m.id).all();
        expect(entries.results).toEqual([{ org_id: m.t.orgId, actor: expect.stringMatching(actor), action: `${m.kind}.delete` }]);
        break;
      }
    }
    check(m.kind, way, copy);
  }
}

const PATHS: Record<RecordKind, string> = { proof: 'proofs', execution: 'executions', program: 'programs', verification: 'verify' };
const CONSOLE_PATHS: Record<RecordKind, string> = {
  proof: 'proofs',
  execution: 'executions',
  program: 'programs',
  verification: 'verifications',
};

async function owner(t: Tenant): Promise<{ session: Session; email: string }> {
  const email = await seedUser(t.orgId, 'owner');
  return { session: await signIn(email), email };
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('deletion reaches every copy', () => {
  for (const kind of RECORD_KINDS) {
    it(`${kind}: DELETE through /v1 (an API key)`, { timeout: 60_000 }, async () => {
      const t = await seedTenant();
      const m = await make(kind, t);
      await expectCopies(m);
      const tombstone = await json(await api(t, `/v1/${PATHS[kind]}/${m.id}`, { method: 'DELETE' }), 200);
      expect(tombstone.deleted_by).toMatch(/\(API key sk_/);
      await expectNothingLeft(m, 'api', new RegExp(`^${escape(t.owner)} \\(API key sk_`));
    });

    it(`${kind}: DELETE through the console`, { timeout: 60_000 }, async () => {
      const t = await seedTenant();
      const m = await make(kind, t);
      await expectCopies(m);
      const { session, email } = await owner(t);
      await as(session, `/console/v1/orgs/${t.orgId}/${CONSOLE_PATHS[kind]}/${m.id}`, 200, { method: 'DELETE' });
      await expectNothingLeft(m, 'console', new RegExp(`^${escape(email)}$`));
    });
  }

  for (const kind of ['proof', 'execution', 'verification'] as const)
    it(`${kind}: the retention sweep`, { timeout: 60_000 }, async () => {
      const t = await seedTenant();
      const m = await make(kind, t);
      await expectCopies(m);
      await send((await owner(t)).session, 'PUT', `/console/v1/orgs/${t.orgId}/retention`, { retention_days: 1 });
      const swept = await sweepRetention(cronPart('retention'), Date.now() + RETENTION_LATER, 1000);
      expect(swept.retentionDeleted).toBeGreaterThanOrEqual(1);
      expect(await countRows(`${kind}s`, 'id = ? AND deleted_at IS NOT NULL', m.id)).toBe(1);
      await expectNothingLeft(m, 'retention', /^retention$/);
    });

  for (const kind of ['proof', 'execution'] as const)
    for (const through of ['/v1', 'the console'] as const)
      it(`${kind}: DELETE through ${through} of one already in the archive`, { timeout: 60_000 }, async () => {
        const t = await seedTenant();
        const m = await make(kind, t);
        await expectCopies(m);
        const archived = await sweepArchive(cronPart('archive'), Date.now() + ARCHIVE_LATER, 30 * 86_400_000);
        expect(archived.archived).toBeGreaterThanOrEqual(1);
        expect(await countRows(`${kind}s`, 'id = ?', m.id)).toBe(0);
        const [line] = await archiveLines(t.orgId, m.id);
        expect(line.public_values).toBe(PUBLIC_VALUES); // the copy the deletion must reach
        if (through === '/v1') {
          await json(await api(t, `/v1/${PATHS[kind]}/${m.id}`, { method: 'DELETE' }), 200);
          await expectNothingLeft(m, 'archived: api', new RegExp(`^${escape(t.owner)} \\(API key sk_`));
        } else {
          const { session, email } = await owner(t);
          await as(session, `/console/v1/orgs/${t.orgId}/${CONSOLE_PATHS[kind]}/${m.id}`, 200, { method: 'DELETE' });
          await expectNothingLeft(m, 'archived: console', new RegExp(`^${escape(email)}$`));
        }
      });
});

describe('a retention set after records were archived', () => {
  for (const kind of ['proof', 'execution'] as const)
    it(`${kind}: the retention sweep reaches it in the archive`, { timeout: 60_000 }, async () => {
      const t = await seedTenant();
      const m = await make(kind, t);
      await expectCopies(m);
      expect((await sweepArchive(cronPart('archive'), Date.now() + ARCHIVE_LATER, 30 * 86_400_000)).archived).toBeGreaterThanOrEqual(1);
      expect(await countRows(`${kind}s`, 'id = ?', m.id)).toBe(0);
      await send((await owner(t)).session, 'PUT', `/console/v1/orgs/${t.orgId}/retention`, { retention_days: 30 });
      // Not before its day is past the retention (and a day more: it ended after it began).
      await sweepRetention(cronPart('retention'), Date.now() + 30 * 86_400_000, 1000);
      expect(await countRows('archived', 'id = ? AND deleted_at IS NULL', m.id)).toBe(1);
      await sweepRetention(cronPart('retention'), Date.now() + ARCHIVE_LATER, 1000);
      await expectNothingLeft(m, 'archived: retention', /^retention$/);
    });
});

describe('what an operator does is audited (finding 9)', () => {
  it('an operator-made API key, its revocation and a retention change are in the organization’s audit log', async () => {
    const t = await seedTenant();
    const audit = () =>
      env.DB.prepare('SELECT actor, action, target, detail FROM audit_log WHERE org_id = ? ORDER BY id')
        .bind(t.orgId)
        .all()
        .then((r) => r.results);
    const key = await runAdmin(createApiKey(t.orgId, 'ci@example.com', undefined, 'prove'));
    const { id } = (await env.DB.prepare('SELECT id FROM api_keys WHERE prefix = ?').bind(key.slice(0, 11)).first<{ id: string }>())!;
    await runAdmin(revokeApiKeyById(id));
    await runAdmin(revokeApiKeyById(id)); // revoked already: nothing changes, nothing is recorded
    await runAdmin(setOrganizationRetention(t.orgId, 30));
    await runAdmin(createApiKey('org_nonexistent', 'x@example.com')); // no organization: no key, no entry
    const operator = 'operator (npm run admin)';
    expect((await audit()).slice(1)).toEqual([
      {
        actor: operator,
        action: 'api_key.create',
        target: id,
        detail: JSON.stringify({ prefix: key.slice(0, 11), owner: 'ci@example.com', scope: 'prove' }),
      },
      {
        actor: operator,
        action: 'api_key.revoke',
        target: id,
        detail: JSON.stringify({ prefix: key.slice(0, 11), owner: 'ci@example.com', name: null }),
      },
      { actor: operator, action: 'retention.update', target: t.orgId, detail: JSON.stringify({ retention_days: 30 }) },
    ]);
    expect((await audit())[0]).toMatchObject({ actor: operator, action: 'api_key.create' }); // the tenant's own key
    expect(await countRows('audit_log', 'org_id = ?', 'org_nonexistent')).toBe(0);
  });
});

afterAll(() => {
  // The matrix the walk checked, for the lead's note: record kind × copy kind → the ways it was deleted (n/a: that kind has no such copy).
  const copies = Object.keys(COPY_KINDS) as CopyKind[];
  const rows = RECORD_KINDS.map((kind) => {
    const ways = checked.get(kind) ?? new Map<Way, Set<CopyKind>>();
    return [
      kind,
      ...copies.map((copy) => {
        if (!COPIES[kind].includes(copy)) return 'n/a';
        const by = [...ways].filter(([, c]) => c.has(copy)).map(([w]) => w);
        return by.length ? by.join(', ') : 'NOT CHECKED';
      }),
    ];
  });
  const table = [['record \\ copy', ...copies], ...rows];
  const widths = table[0].map((_, i) => Math.max(...table.map((r) => r[i].length)));
  console.log(
    [
      'Deletion walk: record kind × copy kind → the ways of deleting it checked',
      ...table.map((r) => r.map((c, i) => c.padEnd(widths[i])).join(' | ')),
    ].join('\n'),
  );
  console.log(
    Object.entries(COPY_KINDS)
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n'),
  );
});
