import { describe, expect, it } from 'vitest';
import { api, json, markReady, registerProgram, seedConfig, seedTenant } from './helpers.ts';
import { env } from 'cloudflare:test';

const post = (t: any, body: string) => api(t, '/v1/projects', { method: 'POST', body, headers: { 'content-type': 'application/json' } });

describe('/v1/projects', () => {
  it('creates a project from a JSON string body (the client’s form) or {name}', async () => {
    const t = await seedTenant();
    const { id } = await json(await post(t, JSON.stringify('Rollup')), 201);
    const { id: id2 } = await json(await post(t, JSON.stringify({ name: 'Bridge' })), 201);
    expect(await json(await api(t, `/v1/projects/${id}`), 200)).toEqual({
      id,
      name: 'Rollup',
      created_at: expect.any(String),
      created_by: t.owner,
      program_count: 0,
      total_proofs_run: 0,
      last_active_at: null,
      highlighted_program_id: null,
    });
    expect((await json(await api(t, `/v1/projects/${id2}`), 200)).name).toBe('Bridge');
    expect((await json(await post(t, '""'), 422)).detail[0].loc).toEqual(['body']);
    expect((await json(await post(t, '{"name": 3}'), 422)).detail[0].type).toBe('value_error');
    expect((await json(await post(t, '"unterminated'), 422)).detail[0].type).toBe('json_invalid');
  });

  it('counts programs and proofs, lists the project’s programs with pagination', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const { id: project } = await json(await post(t, '"P"'), 201);
    const a = await registerProgram(t, cfg, `&project_id=${project}`);
    const b = await registerProgram(t, cfg, `&project_id=${project}`);
    await registerProgram(t, cfg); // in a project of its own
    await env.DB.prepare(`UPDATE programs SET proofs_run = 3, last_active_at = '2030-01-01T00:00:00.000Z' WHERE id = ?`).bind(a).run();
    await markReady(b);
    const rec = await json(await api(t, `/v1/projects/${project}`), 200);
    expect(rec).toMatchObject({ program_count: 2, total_proofs_run: 3, last_active_at: '2030-01-01T00:00:00.000Z' });

    const page = await json(await api(t, `/v1/projects/${project}/programs?page=1&page_size=1`), 200);
    expect(page.pagination).toEqual({ total: 2, page: 1, page_size: 1, pages: 2 });
    const all = await json(await api(t, `/v1/projects/${project}/programs`), 200);
    expect(all.items.map((p: any) => p.id).sort()).toEqual([a, b].sort());
    expect(all.items.every((p: any) => p.project_id === project && p.project_name === 'P')).toBe(true);
    // Every program of a project names the same highlighted program: the project's first.
    expect(all.items.map((p: any) => p.project_highlighted_program_id)).toEqual([a, a]);
    expect(rec.highlighted_program_id).toBe(a);
    // When it moves away, the oldest remaining program takes over, here and in its new project.
    const { id: other } = await json(await post(t, '"Q"'), 201);
    await json(
      await api(t, `/v1/programs/${a}`, {
        method: 'PUT',
        body: JSON.stringify({ project_id: other }),
        headers: { 'content-type': 'application/json' },
      }),
      200,
    );
    expect((await json(await api(t, `/v1/programs/${b}`), 200)).project_highlighted_program_id).toBe(b);
    expect((await json(await api(t, `/v1/programs/${a}`), 200)).project_highlighted_program_id).toBe(a);

    const list = await json(await api(t, '/v1/projects?page=1&page_size=20'), 200);
    expect(list.pagination.total).toBe(3);
    expect(list.items.map((p: any) => p.id)).toContain(project);
  });

  it('searches and sorts projects (the dashboard listing)', async () => {
    const t = await seedTenant();
    for (const name of ['Bridge 100%', 'rollup', 'Roll-up v2', 'zk_bridge']) await json(await post(t, JSON.stringify(name)), 201);
    const names = async (q: string) => (await json(await api(t, `/v1/projects?${q}`), 200)).items.map((p: any) => p.name);
    expect(await names('search=ROLL&sort_by=name&sort_order=asc')).toEqual(['Roll-up v2', 'rollup']);
    expect(await names('search=100%25')).toEqual(['Bridge 100%']); // % is literal text
    expect(await names('search=_')).toEqual(['zk_bridge']);
    expect(await names('sort_by=name&sort_order=desc')).toEqual(['zk_bridge', 'rollup', 'Roll-up v2', 'Bridge 100%']);
    const page = await json(await api(t, '/v1/projects?search=bridge&page_size=1'), 200);
    expect(page.pagination).toEqual({ total: 2, page: 1, page_size: 1, pages: 2 });
    expect((await json(await api(t, '/v1/projects?sort_by=size'), 422)).detail[0]).toMatchObject({
      loc: ['query', 'sort_by'],
      type: 'literal_error',
    });
  });

  it('404s unknown and foreign projects; 422s malformed ids', async () => {
    const t = await seedTenant();
    const other = await seedTenant();
    const { id } = await json(await post(other, '"theirs"'), 201);
    await json(await api(t, `/v1/projects/${id}`), 404);
    await json(await api(t, `/v1/projects/${id}/programs`), 404);
    expect((await json(await api(t, `/v1/projects/abc/programs`), 422)).detail[0].loc).toEqual(['path', 'project_id']);
    expect((await json(await api(t, '/v1/projects'), 200)).items).toEqual([]);
  });
});
