// Work per invocation within the platform's limits (src/jobs/invocations.ts;
// docs/contributors.md "Work per invocation"): each cron and queue handler runs against a
// backlog far past one invocation's work, its bindings wrapped to count every call
// (test/worker/binding-calls.ts: the real local D1, R2 and queues underneath), and never
// spends more than its stated budget; the backlog drains over the following invocations;
// an item that keeps failing waits and is set aside, and the rest go on. A full log
// (LOG_MAX_CHUNKS chunks and its marker) is compacted in stages of at most
// COMPACT_STAGE_R2_OPS R2 operations, never the 2,053 of one invocation.
import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  env,
  getQueueResult,
  waitOnExecutionContext,
} from 'cloudflare:test';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import worker from '../../src/index.ts';
import type { Env } from '../../src/env.ts';
import { INVOCATION_BUDGETS } from '../../src/jobs/invocations.ts';
import { LEASE_CHECK_CALLS } from '../../src/jobs/lease-checks.ts';
import { COMPACT_STAGE_CALLS, COMPACT_STAGE_R2_OPS, compactionPlan, compactionStage, jobLogFrom } from '../../src/jobs/logs.ts';
import { tenantLimits } from '../../src/jobs/settings.ts';
import { WEBHOOK_MESSAGE_CALLS } from '../../src/features/webhooks/delivery.ts';
import { MAIL_REQUEST_CALLS } from '../../src/features/accounts/password-reset.ts';
import { seedUser } from './console-helpers.ts';
import { openDb } from '../../src/db/client.ts';
import { artifactKey } from '../../src/lib/artifact-keys.ts';
import { CallBudget, metered } from '../../src/lib/metered.ts';
import { countingEnv } from './binding-calls.ts';
import { drainQueuedJobs } from './fleet-helpers.ts';
import { queuedProof, writeLongLog } from './log-helpers.ts';
import { api, countRows, json, seedConfig, seedTenant } from './helpers.ts';

beforeEach(drainQueuedJobs);
afterEach(() => vi.restoreAllMocks());

const limits = tenantLimits(env);

/** One cron invocation on `bindings`, waited for to its end (every waitUntil). */
async function cronRun(bindings: Env) {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ scheduledTime: new Date(), cron: '* * * * *' }), bindings, ctx);
  await waitOnExecutionContext(ctx);
}

/** `n` jobs of organization `orgId` leased by agents that died: their leases expired a minute ago. */
async function deadLeases(orgId: string, configId: string, n: number, prefix: string): Promise<string[]> {
  const now = Date.now();
  const ids = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  const statements = ids.flatMap((id) => [
    env.DB.prepare(
      `INSERT INTO jobs (id, kind, subject_id, org_id, config_id, engine, priority, num_gpus, status, attempt, lease_id, lease_expires_at, agent_id, queued_at, notified_at)
       VALUES (?, 'verify', ?, ?, ?, 'dev', 5, 1, 'leased', 1, ?, ?, 'dead-agent', ?, ?)`,
    ).bind(id, `sub-${id}`, orgId, configId, `lease-${id}`, now - 60_000, now, now),
    env.DB.prepare(
      `INSERT INTO leases (id, job_id, attempt, agent_id, token_hash, gpus, machine_type, claimed_at) VALUES (?, ?, 1, 'dead-agent', ?, 1, 'm', ?)`,
    ).bind(`lease-${id}`, id, `hash-${id}-${crypto.randomUUID()}`, now - 120_000),
  ]);
  for (let i = 0; i < statements.length; i += 100) await env.DB.batch(statements.slice(i, i + 100));
  return ids;
}

/** A finished job (of a fresh proof) whose log has `n` chunks and is pending compaction. */
async function finishedLog(n: number): Promise<{ jobId: string; whole: string }> {
  const { jobId } = await queuedProof();
  const whole = await writeLongLog(jobId, n, (i) => `${String(i).padStart(9, '0')}\n`, true);
  return { jobId, whole };
}

/** The whole log as a reader gets it, page by page (from its chunks, or its compacted object). */
async function wholeLog(jobId: string, length: number): Promise<string> {
  let text = '';
  for (let at = 0; at < length;) {
    const page = await jobLogFrom(openDb(env.DB), env.ARTIFACTS, jobId, at, 1 << 20, length);
    if (page.next === at) break;
    text += page.text;
    at = page.next;
  }
  return text;
}

const logStore = async (jobId: string) =>
  (await env.DB.prepare('SELECT log_store FROM jobs WHERE id = ?').bind(jobId).first<{ log_store: string }>())!.log_store;

describe('a log’s compaction in stages', () => {
  it(`a full log (2,048 chunks and its marker): stages of at most ${COMPACT_STAGE_R2_OPS} R2 operations, the log whole between them`, async () => {
    const { jobId, whole } = await finishedLog(2049);
    const plan = compactionPlan(2049);
    expect(plan.counts).toEqual([2049, 65, 3]);
    expect(plan.stages).toHaveLength(65 + 3 + 1);
    const { env: counted, counts } = countingEnv();
    const perStage: { r2: number; calls: number }[] = [];
    for (let stage = 0; (await logStore(jobId)) !== 'clean'; stage++) {
      expect(stage).toBeLessThan(plan.stages.length + 2);
      counts.reset();
      const m = metered(counted, new CallBudget(COMPACT_STAGE_CALLS, 'one stage'));
      expect(['stage', 'compacted']).toContain(await compactionStage(m, jobId, limits));
      perStage.push({ r2: counts.r2, calls: counts.total() });
      // Between stages the log reads whole and right (from its chunks, then from its object).
      if (stage % 20 === 0) expect(await wholeLog(jobId, 20490)).toBe(whole);
    }
    expect(perStage).toHaveLength(plan.stages.length + 1); // and the clean-up
    const largest = Math.max(...perStage.map((s) => s.r2));
    expect(largest).toBe(COMPACT_STAGE_R2_OPS);
    expect(Math.max(...perStage.map((s) => s.calls))).toBeLessThanOrEqual(COMPACT_STAGE_CALLS);
    console.log(
      `compaction of 2,049 chunks: ${perStage.length} stages, at most ${largest} R2 operations and ${Math.max(...perStage.map((s) => s.calls))} calls each, ${perStage.reduce((n, s) => n + s.r2, 0)} R2 operations in all`,
    );
    expect(await wholeLog(jobId, 20490)).toBe(whole);
    expect((await env.ARTIFACTS.list({ prefix: artifactKey.jobLogPrefix(jobId) })).objects).toEqual([]);
  });
});

describe('the cron', () => {
  it('stays within its budget whatever is pending; the backlog drains over runs; a failing item waits and the rest go on', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const now = Date.now();
    // 200 leases of dead agents, five logs pending compaction (one failing), 150 settled purges (one failing), 350 garbage uploads.
    const dead = await deadLeases(t.orgId, cfg, 200, `dead-${crypto.randomUUID().slice(0, 8)}`);
    const logs = await Promise.all([300, 200, 100, 40, 5].map((n) => finishedLog(n)));
    const failingLog = logs[4].jobId;
    const purgeIds = Array.from({ length: 150 }, (_, i) => `purged-${crypto.randomUUID().slice(0, 8)}-${i}`);
    for (const id of purgeIds) await env.ARTIFACTS.put(`test-purge/${id}`, 'x');
    const purgeRows = purgeIds.map((id) =>
      env.DB.prepare(
        `INSERT INTO purges (subject_kind, subject_id, org_id, keys, log_job_id, created_at) VALUES ('proof', ?, ?, ?, NULL, ?)`,
      ).bind(id, t.orgId, JSON.stringify({ input: `test-purge/${id}` }), now - 3_600_000),
    );
    for (let i = 0; i < purgeRows.length; i += 100) await env.DB.batch(purgeRows.slice(i, i + 100));
    const failingPurge = purgeIds[0];
    const uploads = Array.from({ length: 350 }, (_, i) =>
      env.DB.prepare(
        `INSERT INTO result_uploads (id, job_id, lease_id, name, started_at, stored_at, size, sha256) VALUES (?, 'gone-job', 'gone-lease', 'stark', ?, ?, 1, 'x')`,
      ).bind(`upl_garbage_${i}`, now - 60_000, now - 60_000),
    );
    for (let i = 0; i < uploads.length; i += 100) await env.DB.batch(uploads.slice(i, i + 100));

    // One log's chunk reads and one purge's deletes fail, whatever is asked of them.
    const get = env.ARTIFACTS.get.bind(env.ARTIFACTS);
    vi.spyOn(env.ARTIFACTS, 'get').mockImplementation((key: string, options?: R2GetOptions) => {
      if (key.startsWith(artifactKey.jobLogPrefix(failingLog))) return Promise.reject(new Error('R2 read failed'));
      return get(key, options);
    });
    const del = env.ARTIFACTS.delete.bind(env.ARTIFACTS);
    vi.spyOn(env.ARTIFACTS, 'delete').mockImplementation(async (keys) => {
      if ([keys].flat().includes(`test-purge/${failingPurge}`)) throw new Error('R2 delete failed');
      return del(keys);
    });

    const { env: counted, counts } = countingEnv();
    const started = Date.now();
    const spent: number[] = [];
    const pending = async () => ({
      leases: await countRows('jobs', `id LIKE ? AND status = 'leased'`, `${dead[0].replace(/-0$/, '')}-%`),
      logs: (await Promise.all(logs.filter((l) => l.jobId !== failingLog).map((l) => logStore(l.jobId)))).filter((s) => s !== 'clean')
        .length,
      purges: await countRows('purges', `org_id = ? AND subject_id <> ?`, t.orgId, failingPurge),
      uploads: await countRows('result_uploads', `job_id = 'gone-job'`),
      // The failing items are tried too (they may come last in line): until then they count as left.
      untriedFailingLog: 1 - (await countRows('sweep_failures', `kind = 'log' AND item = ?`, failingLog)),
      untriedFailingPurge: 1 - (await countRows('sweep_failures', `kind = 'purge' AND item = ?`, `proof:${failingPurge}`)),
    });
    let left = await pending();
    for (let run = 0; run < 80 && Object.values(left).some((n) => n > 0); run++) {
      counts.reset();
      await cronRun(counted);
      spent.push(counts.total());
      expect(counts.total()).toBeLessThanOrEqual(INVOCATION_BUDGETS.cron.calls);
      left = await pending();
    }
    expect(left).toEqual({ leases: 0, logs: 0, purges: 0, uploads: 0, untriedFailingLog: 0, untriedFailingPurge: 0 });
    // Far more than one invocation could do: it took several, each within the budget.
    expect(spent.length).toBeGreaterThan(1);
    console.log(
      `cron runs to drain the backlog: ${spent.length}, calls each: ${spent.join(', ')} (budget ${INVOCATION_BUDGETS.cron.calls})`,
    );
    // The failing ones failed, then waited out their delay (a minute after the first
    // failure): never tried at every run, and never in the others' way.
    const failures = await env.DB.prepare(`SELECT kind, item, attempts FROM sweep_failures WHERE item IN (?, ?) ORDER BY kind`)
      .bind(failingLog, `proof:${failingPurge}`)
      .all<{ kind: string; item: string; attempts: number }>();
    expect(failures.results.map((f) => [f.kind, f.item])).toEqual([
      ['log', failingLog],
      ['purge', `proof:${failingPurge}`],
    ]);
    const minutes = Math.floor((Date.now() - started) / 60_000);
    for (const f of failures.results) expect(f.attempts).toBeLessThanOrEqual(Math.min(minutes + 1, spent.length - 1));
    expect(await logStore(failingLog)).toBe('chunks');
    expect(await countRows('purges', 'subject_id = ?', failingPurge)).toBe(1);
  });
});

describe('the queue consumers', () => {
  it('a batch of lease checks stays within its budget; checks past it come back later', async () => {
    const t = await seedTenant();
    // More dead agents' leases than one invocation can look at (each expiry: its look, the
    // expiry, a notice, a line in the job's log).
    const ids = await deadLeases(t.orgId, await seedConfig(), 100, `checked-${crypto.randomUUID().slice(0, 8)}`);
    const batch = createMessageBatch(
      'zk-proving-lease-checks-local',
      ids.map((id, i) => ({
        id: `lc-${i}`,
        timestamp: new Date(),
        attempts: 1,
        body: { type: 'lease-check', job_id: id, lease_id: `lease-${id}` },
      })),
    );
    const { env: counted, counts } = countingEnv();
    const ctx = createExecutionContext();
    await worker.queue(batch as MessageBatch<never>, counted);
    const result = await getQueueResult(batch, ctx);
    expect(counts.total()).toBeLessThanOrEqual(INVOCATION_BUDGETS.leaseChecks.calls);
    // The first ones looked at and acked, the rest back in a second: none lost, none twice.
    const acked = result.explicitAcks.map((m) => Number(m.slice(3)));
    const retried = result.retryMessages.map((m) => Number(m.msgId.slice(3)));
    expect(acked.length).toBeGreaterThanOrEqual(Math.floor(INVOCATION_BUDGETS.leaseChecks.calls / LEASE_CHECK_CALLS));
    expect(retried.length).toBeGreaterThan(0);
    expect([...acked, ...retried].sort((a, b) => a - b)).toEqual(ids.map((_, i) => i));
    const stillLeased = await env.DB.prepare(`SELECT id FROM jobs WHERE id IN (SELECT value FROM json_each(?)) AND status = 'leased'`)
      .bind(JSON.stringify(ids))
      .all<{ id: string }>();
    expect(stillLeased.results.map((r) => ids.indexOf(r.id)).sort((a, b) => a - b)).toEqual(retried.sort((a, b) => a - b));
  });

  it('a batch of webhook attempts stays within its budget, the POSTs counted; attempts past it come back later', async () => {
    const t = await seedTenant();
    const endpoint = await json<{ id: string }>(
      await api(t, '/v1/webhooks', {
        method: 'POST',
        body: JSON.stringify({ url: 'http://127.0.0.1:9/budget-hook' }),
        headers: { 'content-type': 'application/json' },
      }),
      201,
    );
    const now = Date.now();
    const ids = Array.from({ length: 25 }, (_, i) => `msg_budget_${crypto.randomUUID().replace(/-/g, '')}_${i}`);
    await env.DB.batch(
      ids.map((id) =>
        env.DB.prepare(
          `INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_type, subject_kind, subject_id, payload, next_attempt_at) VALUES (?, ?, ?, 'webhook.test', 'test', ?, '{"type":"webhook.test"}', ?)`,
        ).bind(id, t.orgId, endpoint.id, endpoint.id, now),
      ),
    );
    let posts = 0;
    vi.spyOn(globalThis, 'fetch').mockImplementation(async () => (posts++, new Response('no', { status: 500 })));
    const batch = createMessageBatch(
      'zk-proving-webhooks-local',
      ids.map((id, i) => ({ id: `wh-${i}`, timestamp: new Date(), attempts: 1, body: { type: 'webhook', delivery_id: id, attempt: 0 } })),
    );
    const { env: counted, counts } = countingEnv();
    const ctx = createExecutionContext();
    await worker.queue(batch as MessageBatch<never>, counted);
    const result = await getQueueResult(batch, ctx);
    const fits = Math.floor(INVOCATION_BUDGETS.webhooks.calls / WEBHOOK_MESSAGE_CALLS);
    expect(counts.total() + posts).toBeLessThanOrEqual(INVOCATION_BUDGETS.webhooks.calls);
    expect(posts).toBe(fits);
    expect(result.explicitAcks).toHaveLength(fits);
    expect(result.retryMessages).toHaveLength(ids.length - fits);
  });

  it('a batch of password-reset mail requests stays within its budget, each mail sent once; requests past it come back later', async () => {
    const t = await seedTenant();
    // Accounts (a link made and mailed to the outbox) and unknown emails (nothing made), more than one invocation takes.
    const emails: string[] = [];
    for (let i = 0; i < 20; i++) emails.push(i % 2 ? await seedUser(t.orgId, 'member') : `nobody-${i}-${crypto.randomUUID()}@example.com`);
    const batch = createMessageBatch(
      'zk-proving-mail-local',
      emails.map((email, i) => ({ id: `mail-${i}`, timestamp: new Date(), attempts: 1, body: { type: 'password-reset', email } })),
    );
    const { env: counted, counts } = countingEnv();
    const ctx = createExecutionContext();
    await worker.queue(batch as MessageBatch<never>, counted);
    const result = await getQueueResult(batch, ctx);
    expect(counts.total()).toBeLessThanOrEqual(INVOCATION_BUDGETS.mail.calls);
    const fits = Math.floor(INVOCATION_BUDGETS.mail.calls / MAIL_REQUEST_CALLS);
    // At least as many as their most calls fit (an unknown email costs less), the rest retried: none lost, none twice.
    expect(result.explicitAcks.length).toBeGreaterThanOrEqual(fits);
    expect(result.retryMessages.length).toBeGreaterThan(0);
    expect([...result.explicitAcks, ...result.retryMessages.map((m) => m.msgId)].sort()).toEqual(batch.messages.map((m) => m.id).sort());
    // The acked accounts got one mail each; nobody past the budget got one.
    const acked = new Set(result.explicitAcks.map((id) => emails[Number(id.slice(5))]));
    const mailed = await env.DB.prepare(`SELECT "to" AS recipient FROM mail_outbox WHERE "to" IN (SELECT value FROM json_each(?))`)
      .bind(JSON.stringify(emails))
      .all<{ recipient: string }>();
    expect(mailed.results.map((r) => r.recipient).sort()).toEqual(emails.filter((e, i) => i % 2 && acked.has(e)).sort());
  });

  it('a batch of job notices kept for the local pull API stays within its budget', async () => {
    const batch = createMessageBatch(
      'zk-proving-jobs-local',
      Array.from({ length: 100 }, (_, i) => ({
        id: `notice-${crypto.randomUUID()}`,
        timestamp: new Date(),
        attempts: 1,
        body: { job_id: `job-${i}`, kind: 'proof' },
      })),
    );
    const { env: counted, counts } = countingEnv();
    const ctx = createExecutionContext();
    await worker.queue(batch, counted);
    expect((await getQueueResult(batch, ctx)).ackAll).toBe(true);
    expect(counts.total()).toBeLessThanOrEqual(INVOCATION_BUDGETS.queueEmulation.calls);
    expect(counts.d1).toBe(7);
  });
});
