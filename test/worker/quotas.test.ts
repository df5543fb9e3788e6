// Per-organization quotas (src/jobs/quotas.ts): every job-creating request goes
// through submitJob, which refuses with 429 and stores nothing when a quota is full.
import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { setOrganizationLimits } from '../../src/admin/statements.ts';
import {
  api,
  countRows,
  json,
  markReady,
  programForm,
  registerProgram,
  runAdmin,
  seedConfig,
  seedTenant,
  VMEXE,
  guest,
  watchQueue,
  type Tenant,
} from './helpers.ts';

const submit = (t: Tenant, program: string, query = '') =>
  api(t, `/v1/proofs?program_id=${program}${query}`, {
    method: 'POST',
    body: '{"input": ["0x0101"]}',
    headers: { 'content-type': 'application/json' },
  });

async function readyProgram(t: Tenant, cfg?: string) {
  const id = await registerProgram(t, cfg ?? (await seedConfig()));
  await markReady(id);
  await env.DB.prepare(`UPDATE jobs SET status = 'done' WHERE subject_id = ?`).bind(id).run(); // its commit job is not counted here
  return id;
}

/** Every object in the bucket (other test files leave many). */
async function objectCount(): Promise<number> {
  let n = 0;
  let cursor: string | undefined;
  do {
    const page = await env.ARTIFACTS.list({ cursor });
    n += page.objects.length;
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return n;
}

/** What a refused request could have left behind: rows of the organization, objects. */
async function footprint(t: Tenant) {
  return {
    proofs: await countRows('proofs', 'org_id = ?', t.orgId),
    programs: await countRows('programs', 'org_id = ?', t.orgId),
    jobs: await countRows('jobs', 'org_id = ?', t.orgId),
    objects: await objectCount(),
  };
}

describe('per-organization quotas', () => {
  it('at max_active_jobs queued-or-running jobs a submission is 429, says which quota and its use, and stores nothing', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    await runAdmin(setOrganizationLimits(t.orgId, { maxActiveJobs: 2 }));
    await json(await submit(t, program), 200);
    await json(await submit(t, program), 200);
    const before = await footprint(t);
    const queue = watchQueue();
    const refused = await json(await submit(t, program), 429);
    expect(refused.detail).toMatch(/max_active_jobs allows 2 queued or running jobs .* yours has 2/);
    const register = await json(
      await api(t, `/v1/programs?config_id=${await seedConfig()}`, { method: 'POST', body: programForm(guest('hello.elf'), VMEXE) }),
      429,
    );
    expect(register.detail).toMatch(/max_active_jobs/);
    expect(await footprint(t)).toEqual(before);
    expect(queue).not.toHaveBeenCalled();

    // A finished job makes room; other organizations were never limited by this one.
    const [first] = (
      await env.DB.prepare(`SELECT subject_id FROM jobs WHERE org_id = ? AND kind = 'proof'`).bind(t.orgId).all<{ subject_id: string }>()
    ).results;
    await json(await api(t, `/v1/proofs/${first.subject_id}/cancel`, { method: 'POST' }), 200);
    await json(await submit(t, program), 200);
    const other = await seedTenant();
    await json(await submit(other, await readyProgram(other)), 200);
  });

  it('max_gpus counts the GPUs queued and running jobs hold (an openvm job holds one, a dev job none)', async () => {
    const t = await seedTenant();
    await runAdmin(setOrganizationLimits(t.orgId, { maxGpus: 1 }));
    const openvm = await readyProgram(t, await seedConfig({ engine: 'openvm' }));
    await json(await submit(t, openvm, '&num_gpus=8'), 200);
    const refused = await json(await submit(t, openvm, '&num_gpus=8'), 429);
    expect(refused.detail).toMatch(/max_gpus allows 1 GPUs .* yours hold 1; this job needs 1 more/);
    await json(await submit(t, await readyProgram(t), '&num_gpus=8'), 200); // dev engine: no GPU
    await runAdmin(setOrganizationLimits(t.orgId, { maxGpus: null })); // back to ORG_MAX_GPUS
    await json(await submit(t, openvm, '&num_gpus=8'), 200);
  });

  it('concurrent submissions never overshoot a quota together: the insert itself is conditional', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    await runAdmin(setOrganizationLimits(t.orgId, { maxActiveJobs: 3 }));
    const objects = await objectCount();
    const statuses = (await Promise.all(Array.from({ length: 12 }, () => submit(t, program)))).map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(9);
    expect(await countRows('proofs', 'org_id = ?', t.orgId)).toBe(3);
    expect(await objectCount()).toBe(objects + 3); // the refused requests' inputs were deleted
  });

  it('defaults come from ORG_MAX_ACTIVE_JOBS and ORG_MAX_GPUS (wrangler.toml)', async () => {
    const t = await seedTenant();
    const row = await env.DB.prepare('SELECT max_active_jobs, max_gpus, share_weight FROM organizations WHERE id = ?')
      .bind(t.orgId)
      .first();
    expect(row).toEqual({ max_active_jobs: null, max_gpus: null, share_weight: 1 });
    expect(env.ORG_MAX_ACTIVE_JOBS).toBe('1000');
    const program = await readyProgram(t);
    // Fill to the default with rows written directly, then one more through the API.
    const values = Array.from(
      { length: 1000 },
      (_, i) => `('q-${t.orgId}-${i}', 'proof', 'none-${t.orgId}-${i}', '${t.orgId}', 'c', 'dev', 5, 1, 0, 0)`,
    );
    for (let i = 0; i < values.length; i += 200)
      await env.DB.prepare(
        `INSERT INTO jobs (id, kind, subject_id, org_id, config_id, engine, priority, num_gpus, queued_at, notified_at) VALUES ${values.slice(i, i + 200).join(', ')}`,
      ).run();
    expect((await json(await submit(t, program), 429)).detail).toMatch(/allows 1000 .* yours has 1000/);
    await env.DB.prepare(`UPDATE jobs SET status = 'done' WHERE org_id = ?`).bind(t.orgId).run();
  });
});
