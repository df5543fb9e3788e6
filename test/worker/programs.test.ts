import { env } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { setConfigActive } from '../../src/admin/statements.ts';
import {
  api,
  countRows,
  guest,
  json,
  markReady,
  programForm,
  r2Keys,
  registerProgram,
  runAdmin,
  seedConfig,
  seedTenant,
  VMEXE,
  watchQueue,
} from './helpers.ts';

afterEach(() => vi.restoreAllMocks());

async function sha256hex(bytes: Uint8Array) {
  return Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** Checks a failed registration left nothing behind: no row, no object, no message. */
async function expectNothingStored(orgId: string, run: () => Promise<Response>, status: number) {
  const objectsBefore = await r2Keys('programs/');
  const send = watchQueue();
  const res = await run();
  const body = await res.text();
  expect(res.status, body).toBe(status);
  expect(await countRows('programs', 'org_id = ?', orgId)).toBe(0);
  expect(await countRows('projects', 'org_id = ?', orgId)).toBe(0);
  expect(await r2Keys('programs/')).toEqual(objectsBefore);
  expect(send).not.toHaveBeenCalled();
  return JSON.parse(body);
}

describe('POST /v1/programs', () => {
  it('registers a program: files in R2, record not_ready, commit job queued', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const send = watchQueue();
    const elf = guest('hello.elf');
    const res = await api(t, `/v1/programs?config_id=${cfg}&program_name=my%20prog&commit_sha=abc123&default_num_gpus=4`, {
      method: 'POST',
      body: programForm(elf, VMEXE),
    });
    const { id } = await json<{ id: string }>(res, 201);

    const program = await json(await api(t, `/v1/programs/${id}`), 200);
    expect(program).toMatchObject({
      id,
      status: 'not_ready',
      name: 'my prog',
      created_by: t.owner,
      config_uuid: cfg,
      program_hash: await sha256hex(elf),
      openvm_config: '1.4.0',
      cells_used: 0,
      proofs_run: 0,
      commit_sha: 'abc123',
      default_num_gpus: 4,
      project_name: 'my prog',
      project_highlighted_program_id: id,
      error_message: '',
      launched_at: null,
      terminated_at: null,
    });
    expect(program.last_active_at).toBe(program.created_at);

    const elfObj = await env.ARTIFACTS.get(`programs/${id}/program.elf`);
    expect(new Uint8Array(await elfObj!.arrayBuffer())).toEqual(elf);
    expect(await (await env.ARTIFACTS.get(`programs/${id}/program.vmexe`))!.text()).toBe(new TextDecoder().decode(VMEXE));

    const job = await env.DB.prepare(`SELECT * FROM jobs WHERE kind = 'commit' AND subject_id = ?`).bind(id).first<any>();
    expect(job).toMatchObject({ status: 'queued', engine: 'dev', config_id: cfg, org_id: t.orgId, attempt: 0 });
    expect(send).toHaveBeenCalledTimes(1);
    expect(send).toHaveBeenCalledWith({ job_id: job.id, kind: 'commit' }, { contentType: 'json' });
  });

  it('attaches to an existing project of the caller, and takes project_name from the form', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const res = await api(t, `/v1/programs?config_id=${cfg}`, {
      method: 'POST',
      body: programForm(guest('hello.elf'), VMEXE, { project_name: 'From the form' }),
    });
    const first = await json(await api(t, `/v1/programs/${(await json(res, 201)).id}`), 200);
    expect(first.project_name).toBe('From the form');
    expect(first.name).toBe('hello'); // the ELF's file name when no program_name

    const second = await registerProgram(t, cfg, `&project_id=${first.project_id}`);
    const rec = await json(await api(t, `/v1/programs/${second}`), 200);
    expect(rec.project_id).toBe(first.project_id);
    expect(rec.project_highlighted_program_id).toBe(first.id);
  });

  it('streams large files through R2 multipart uploads intact', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const big = new Uint8Array(20 * 1024 * 1024 + 12345);
    for (let i = 0; i < big.length; i += 4096) big[i] = (i / 4096) & 0xff;
    const id = await (async () => {
      const res = await api(t, `/v1/programs?config_id=${cfg}`, { method: 'POST', body: programForm(guest('hello.elf'), big) });
      return (await json(res, 201)).id;
    })();
    const dl = await api(t, `/v1/programs/${id}/download/exe`);
    expect(dl.status).toBe(200);
    expect(dl.headers.get('content-length')).toBe(String(big.length));
    const got = new Uint8Array(await dl.arrayBuffer());
    expect(await sha256hex(got)).toBe(await sha256hex(big));
  });

  describe('refuses bad ELFs with 400 and stores nothing', () => {
    const mutate = (f: (b: Uint8Array, dv: DataView) => void) => () => {
      const b = guest('hello.elf').slice();
      f(b, new DataView(b.buffer));
      return b;
    };
    const cases: [string, () => Uint8Array, RegExp][] = [
      ['not an ELF', () => new TextEncoder().encode('#!/bin/sh\necho this is not an elf\n'), /not an ELF file/],
      ['empty', () => new Uint8Array(0), /empty/],
      ['truncated header', () => guest('hello.elf').slice(0, 40), /too short/],
      ['64-bit', mutate((b) => (b[4] = 2)), /not a 32-bit ELF/],
      ['big-endian', mutate((b) => (b[5] = 2)), /not little-endian/],
      ['x86-64 machine', mutate((_, dv) => dv.setUint16(18, 62, true)), /not a RISC-V binary/],
      ['relocatable object', mutate((_, dv) => dv.setUint16(16, 1, true)), /not an executable/],
      ['no program headers', mutate((_, dv) => dv.setUint16(44, 0, true)), /no program headers/],
      ['entry outside segments', mutate((_, dv) => dv.setUint32(24, 0x1fff_fff0, true)), /entry point/],
    ];
    for (const [name, bytes, message] of cases) {
      it(name, async () => {
        const t = await seedTenant();
        const cfg = await seedConfig();
        const body = await expectNothingStored(
          t.orgId,
          () => api(t, `/v1/programs?config_id=${cfg}`, { method: 'POST', body: programForm(bytes(), VMEXE) }),
          400,
        );
        expect(body.detail).toMatch(message);
      });
    }
  });

  it('413s a body over MAX_UPLOAD_BYTES from Content-Length, before reading it', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const limit = Number(env.MAX_UPLOAD_BYTES);
    // The declared length alone decides: the body is never read.
    const body = await expectNothingStored(
      t.orgId,
      () =>
        api(t, `/v1/programs?config_id=${cfg}`, {
          method: 'POST',
          headers: { 'content-type': 'multipart/form-data; boundary=x', 'content-length': String(limit + 1) },
          body: new Uint8Array(16),
        }),
      413,
    );
    expect(body.detail).toContain(String(limit));
  });

  it('413s a streamed body that grows past the limit, and removes what it had written', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const limit = Number(env.MAX_UPLOAD_BYTES);
    const form = programForm(guest('hello.elf'), new Uint8Array(limit + 1024));
    const encoded = new Response(form);
    // A stream body has no Content-Length, so the limit is enforced while reading.
    await expectNothingStored(
      t.orgId,
      () =>
        api(t, `/v1/programs?config_id=${cfg}`, {
          method: 'POST',
          headers: { 'content-type': encoded.headers.get('content-type')! },
          body: encoded.body,
          // @ts-expect-error: duplex is required for stream bodies in fetch
          duplex: 'half',
        }),
      413,
    );
  });

  it('422s missing file parts with FastAPI-style locs', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const body = await expectNothingStored(
      t.orgId,
      () => api(t, `/v1/programs?config_id=${cfg}`, { method: 'POST', body: programForm(guest('hello.elf'), null) }),
      422,
    );
    expect(body.detail).toEqual([{ loc: ['body', 'vmexe'], msg: 'Field required', type: 'missing' }]);
  });

  it('415s a body that is not multipart, naming the type it reads', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const body = await expectNothingStored(
      t.orgId,
      () =>
        api(t, `/v1/programs?config_id=${cfg}`, {
          method: 'POST',
          body: JSON.stringify({}),
          headers: { 'content-type': 'application/json' },
        }),
      415,
    );
    expect(body.detail).toMatch(/send this body as multipart\/form-data/);
  });

  it('validates the query: config_id, default_num_gpus', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const post = (q: string) => api(t, `/v1/programs?${q}`, { method: 'POST', body: programForm(guest('hello.elf'), VMEXE) });
    expect((await json(await post(''), 422)).detail).toEqual([{ loc: ['query', 'config_id'], msg: 'Field required', type: 'missing' }]);
    expect((await json(await post(`config_id=${cfg}&default_num_gpus=0`), 422)).detail[0]).toMatchObject({
      loc: ['query', 'default_num_gpus'],
      type: 'greater_than_equal',
    });
    expect((await json(await post(`config_id=${cfg}&default_num_gpus=10001`), 422)).detail[0]).toMatchObject({
      loc: ['query', 'default_num_gpus'],
      type: 'less_than_equal',
    });
    expect((await json(await post(`config_id=${cfg}&default_num_gpus=many`), 422)).detail[0]).toMatchObject({
      loc: ['query', 'default_num_gpus'],
      type: 'int_parsing',
    });
    expect(await countRows('programs', 'org_id = ?', t.orgId)).toBe(0);
  });

  it('404s an unknown config, 400s an inactive one, 404s a project of another organization', async () => {
    const t = await seedTenant();
    const other = await seedTenant();
    const cfg = await seedConfig();
    const foreignProgram = await registerProgram(other, cfg);
    const foreignProject = (await json(await api(other, `/v1/programs/${foreignProgram}`), 200)).project_id;

    await expectNothingStored(
      t.orgId,
      () =>
        api(t, `/v1/programs?config_id=cfg_01JD00000000000000000000ZZ`, { method: 'POST', body: programForm(guest('hello.elf'), VMEXE) }),
      404,
    );
    await expectNothingStored(
      t.orgId,
      () =>
        api(t, `/v1/programs?config_id=${cfg}&project_id=${foreignProject}`, {
          method: 'POST',
          body: programForm(guest('hello.elf'), VMEXE),
        }),
      404,
    );
    const inactive = await seedConfig();
    await runAdmin(setConfigActive(inactive, false));
    const body = await expectNothingStored(
      t.orgId,
      () => api(t, `/v1/programs?config_id=${inactive}`, { method: 'POST', body: programForm(guest('hello.elf'), VMEXE) }),
      400,
    );
    expect(body.detail).toMatch(/not active/);
  });
});

describe('reading, moving and downloading programs', () => {
  it('downloads the ELF and VMEXE byte for byte; app_exe_commit 404 until known, then bare hex; source 404', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const id = await registerProgram(t, cfg);
    const elf = await api(t, `/v1/programs/${id}/download/elf`);
    expect(new Uint8Array(await elf.arrayBuffer())).toEqual(guest('hello.elf'));
    expect(new Uint8Array(await (await api(t, `/v1/programs/${id}/download/exe`)).arrayBuffer())).toEqual(VMEXE);
    const before = await json(await api(t, `/v1/programs/${id}/download/app_exe_commit`), 404);
    expect(before.detail).toMatch(/not_ready/);
    await markReady(id);
    const after = await api(t, `/v1/programs/${id}/download/app_exe_commit`);
    // The published client hex-decodes the trimmed body: no 0x.
    expect(await after.text()).toBe('cd'.repeat(32));
    expect((await json(await api(t, `/v1/programs/${id}/download/source`), 404)).detail).toMatch(/pre-built.*no source/);
    expect((await json(await api(t, `/v1/programs/${id}/download/wasm`), 422)).detail[0].loc).toEqual(['path', 'artifact']);
  });

  it('moves a program to another of the caller’s projects and renames it', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const id = await registerProgram(t, cfg);
    const { id: project } = await json(
      await api(t, '/v1/projects', { method: 'POST', body: JSON.stringify('Target'), headers: { 'content-type': 'application/json' } }),
      201,
    );
    const moved = await json(
      await api(t, `/v1/programs/${id}`, {
        method: 'PUT',
        body: JSON.stringify({ project_id: project, name: 'renamed' }),
        headers: { 'content-type': 'application/json' },
      }),
      200,
    );
    expect(moved).toMatchObject({ id, project_id: project, project_name: 'Target', name: 'renamed' });

    const other = await seedTenant();
    const { id: foreign } = await json(
      await api(other, '/v1/projects', { method: 'POST', body: JSON.stringify('Theirs'), headers: { 'content-type': 'application/json' } }),
      201,
    );
    await json(
      await api(t, `/v1/programs/${id}`, {
        method: 'PUT',
        body: JSON.stringify({ project_id: foreign }),
        headers: { 'content-type': 'application/json' },
      }),
      404,
    );
    const bad = await json(
      await api(t, `/v1/programs/${id}`, { method: 'PUT', body: '{"project_id": ', headers: { 'content-type': 'application/json' } }),
      422,
    );
    expect(bad.detail[0].type).toBe('json_invalid');
  });

  it('422s a malformed program id and 404s an unknown one', async () => {
    const t = await seedTenant();
    expect((await json(await api(t, '/v1/programs/12'), 422)).detail[0]).toMatchObject({
      loc: ['path', 'program_id'],
      type: 'uuid_parsing',
    });
    await json(await api(t, `/v1/programs/${crypto.randomUUID()}`), 404);
  });

  it('lists programs (deprecated) with successor headers and a project filter', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const a = await registerProgram(t, cfg);
    const b = await registerProgram(t, cfg);
    const res = await api(t, '/v1/programs?page=1&page_size=20');
    expect(res.headers.get('Deprecation')).toMatch(/^@\d+$/);
    expect(res.headers.get('Sunset')).toMatch(/GMT$/);
    expect(res.headers.get('Link')).toContain('rel="successor-version"');
    const all = await json(res, 200);
    expect(all.items.map((p: any) => p.id).sort()).toEqual([a, b].sort());
    expect(all.pagination).toEqual({ total: 2, page: 1, page_size: 20, pages: 1 });
    const projectOfA = (await json(await api(t, `/v1/programs/${a}`), 200)).project_id;
    const filtered = await json(await api(t, `/v1/programs?project_id=${projectOfA}`), 200);
    expect(filtered.items.map((p: any) => p.id)).toEqual([a]);
  });
});
