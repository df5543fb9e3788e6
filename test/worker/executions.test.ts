import { env } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { api, json, markReady, registerProgram, seedConfig, seedTenant, watchQueue } from './helpers.ts';

afterEach(() => vi.restoreAllMocks());

describe('/v1/executions', () => {
  it('queues an execution and reads it back, in lists and logs', async () => {
    const t = await seedTenant();
    const program = await registerProgram(t, await seedConfig());
    await markReady(program);
    const send = watchQueue();
    const post = (q: string, body: unknown) =>
      api(t, `/v1/executions?program_id=${program}${q}`, {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      });
    const { id } = await json(await post('&mode=pure', { input: ['0x0101'] }), 200);
    expect(await json(await api(t, `/v1/executions/${id}`), 200)).toEqual({
      id,
      created_at: expect.any(String),
      status: 'Queued',
      program_uuid: program,
      created_by: t.owner,
      mode: 'pure',
      error_message: '',
      launched_at: null,
      terminated_at: null,
      public_values: null,
      cost: null,
      num_segments: null,
      total_cycle: null,
      total_tick: null,
      num_instructions: null,
      // limits and the wait (README "Job limits", "Why a job waits")
      cycle_limit: null,
      cost_limit: null,
      deadline_at: null,
      waiting_reason: expect.stringMatching(/^(jobs_ahead|starting)$/),
      waiting_detail: null,
      jobs_ahead: expect.any(Number),
      estimated_start_at: null,
      estimated_start_detail: expect.stringMatching(/^No estimate: /),
    });
    const job = await env.DB.prepare(`SELECT id FROM jobs WHERE kind = 'execute' AND subject_id = ?`).bind(id).first<{ id: string }>();
    expect(send).toHaveBeenCalledWith({ job_id: job!.id, kind: 'execute' }, { contentType: 'json' });
    const list = await json(await api(t, `/v1/executions?program_id=${program}&page=1&page_size=20`), 200);
    expect(list).toEqual({ items: [expect.objectContaining({ id })], pagination: { total: 1, page: 1, page_size: 20, pages: 1 } });
    expect(await (await api(t, `/v1/executions/${id}/logs`)).text()).toBe('');

    expect((await json(await post('&mode=fast', { input: [] }), 422)).detail[0]).toMatchObject({
      loc: ['query', 'mode'],
      type: 'literal_error',
    });
    expect((await json(await post('', { input: ['0x09'] }), 422)).detail[0].loc).toEqual(['body', 'input', 0]);
  });

  it('spells statuses as the published client polls for them; a failed run has no public values', async () => {
    const t = await seedTenant();
    const program = await registerProgram(t, await seedConfig());
    await markReady(program);
    const submit = async () =>
      (
        await json(
          await api(t, `/v1/executions?program_id=${program}&mode=segment`, {
            method: 'POST',
            body: '{"input": []}',
            headers: { 'content-type': 'application/json' },
          }),
          200,
        )
      ).id as string;
    // A finished execution has a cost (migrations/0023_fleet_authority.sql).
    const set = (id: string, status: string) =>
      env.DB.prepare(`UPDATE executions SET status = ?, cost = coalesce(cost, 0) WHERE id = ?`).bind(status, id).run();
    const statusOf = async (id: string) =>
      await json<{ status: string; error_message: string | null }>(await api(t, `/v1/executions/${id}`), 200);
    const id = await submit();
    for (const [stored, shown] of [
      ['queued', 'Queued'],
      ['running', 'InProgress'],
      ['succeeded', 'Succeeded'],
      ['failed', 'Failed'],
    ] as const) {
      await set(id, stored);
      expect((await statusOf(id)).status).toBe(shown);
    }
    // The client knows no canceled state: a canceled run is a failure that says so.
    const canceled = await submit();
    await set(canceled, 'canceled');
    expect(await statusOf(canceled)).toMatchObject({ status: 'Failed', error_message: 'Canceled' });
  });

  it('validates the input before the program: 422 even when the program is not ready', async () => {
    const t = await seedTenant();
    const program = await registerProgram(t, await seedConfig());
    const post = (body: string) =>
      api(t, `/v1/executions?program_id=${program}`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    expect((await json(await post('{"input": ["0x09"]}'), 422)).detail[0].loc).toEqual(['body', 'input', 0]);
    expect((await json(await post('{"input": []}'), 409)).detail).toMatch(/not_ready/);
  });

  it('404s foreign programs and executions; 409s programs that are not ready', async () => {
    const t = await seedTenant();
    const other = await seedTenant();
    const cfg = await seedConfig();
    const mine = await registerProgram(t, cfg);
    const body = { method: 'POST', body: '{"input": []}', headers: { 'content-type': 'application/json' } };
    expect((await json(await api(t, `/v1/executions?program_id=${mine}`, body), 409)).detail).toMatch(/not_ready/);
    const theirs = await registerProgram(other, cfg);
    await markReady(theirs);
    await json(await api(t, `/v1/executions?program_id=${theirs}`, body), 404);
    const { id } = await json(await api(other, `/v1/executions?program_id=${theirs}`, body), 200);
    await json(await api(t, `/v1/executions/${id}`), 404);
    await json(await api(t, `/v1/executions/${id}/logs`), 404);
    await json(await api(t, `/v1/executions?program_id=${theirs}`), 404);
  });
});
