// Names people can trust (issue 29, "What to build" 5): every stored name refuses control
// and bidirectional formatting characters with 422, through one check (lib/schemas.ts
// safeName) on /v1 and the console alike; what a key does is recorded as the person who
// made it, the key's name beside it; the console shows what was stored before escaped.
import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { createOrganization, createUser } from '../../src/admin/statements.ts';
import { shownText } from '../../src/console/ui/format.ts';
import { DataTable } from '../../src/console/ui/table.tsx';
import { api, BASE, guest, json, markReady, programForm, registerProgram, seedConfig, seedTenant, VMEXE } from './helpers.ts';
import { as, postJson, seedUser, send, signIn, uniqueEmail } from './console-helpers.ts';

/** U+202E RIGHT-TO-LEFT OVERRIDE: "admin@a.example (‮)elpmaxe.a@renwo(" reads as "admin@a.example ((owner@a.example)". */
const RLO = '\u202e';
const SPOOF = `${RLO})elpmaxe.a@renwo(`;
const BAD = [SPOOF, 'tab\there', 'line\nbreak', 'nul\u0000', 'c1\u0085', 'isolate\u2066x\u2069', 'mark\u200f', 'sepa\u2028rator'];

const refusedName = (body: { detail: { loc: string[]; msg: string; type: string }[] }, loc: string[]) =>
  expect(body.detail).toEqual([
    {
      loc,
      msg: expect.stringMatching(
        /^Value error, a name may not contain control or bidirectional formatting characters \(found U\+[0-9A-F]{4}\)/,
      ),
      type: 'value_error',
    },
  ]);
const jsonInit = (body: unknown, method = 'POST'): RequestInit => ({
  method,
  body: JSON.stringify(body),
  headers: { 'content-type': 'application/json' },
});

describe('stored names refuse control and bidirectional characters (422), on every door', () => {
  it('an API key named to read as someone else (finding 11, as found): 422, nothing made', async () => {
    const t = await seedTenant();
    const admin = await signIn(await seedUser(t.orgId, 'admin'));
    for (const name of BAD) refusedName(await send(admin, 'POST', `/console/v1/orgs/${t.orgId}/api-keys`, { name }, 422), ['body', 'name']);
    const made = (await as(admin, `/console/v1/orgs/${t.orgId}/api-keys`)).items.filter(
      (k: { owner_user_id: string }) => k.owner_user_id === admin.userId,
    );
    expect(made).toEqual([]);
  });

  it('programs: program_name and project_name at registration, in the query or the form; a rename', async () => {
    const t = await seedTenant();
    const config = await seedConfig();
    const register = (query: string, extra: Record<string, string> = {}) =>
      api(t, `/v1/programs?config_id=${config}${query}`, { method: 'POST', body: programForm(guest('hello.elf'), VMEXE, extra) });
    refusedName(await json(await register(`&program_name=${encodeURIComponent(SPOOF)}`), 422), ['query', 'program_name']);
    refusedName(await json(await register(`&project_name=${encodeURIComponent(SPOOF)}`), 422), ['query', 'project_name']);
    refusedName(await json(await register('', { project_name: SPOOF }), 422), ['body', 'project_name']);
    const program = await registerProgram(t, config);
    refusedName(await json(await api(t, `/v1/programs/${program}`, jsonInit({ name: SPOOF }, 'PUT')), 422), ['body', 'name']);
    refusedName(await json(await api(t, `/v1/programs/${program}`, jsonInit({ program_name: 'tab\t' }, 'PUT')), 422), [
      'body',
      'program_name',
    ]);
    // Plain names (what the published client sends) still work, Unicode included.
    await json(await api(t, `/v1/programs/${program}`, jsonInit({ name: 'prüfung – ελέγχος' }, 'PUT')), 200);
  });

  it('a program named after its ELF file keeps no such character of the filename', async () => {
    const t = await seedTenant();
    const config = await seedConfig();
    const form = new FormData();
    form.append('elf', new File([guest('hello.elf')], `${RLO}fle.olleh.elf`, { type: 'application/octet-stream' }));
    form.append('vmexe', new File([VMEXE], 'hello.vmexe', { type: 'application/octet-stream' }));
    const { id } = await json(await api(t, `/v1/programs?config_id=${config}`, { method: 'POST', body: form }), 201);
    await markReady(id);
    expect((await json(await api(t, `/v1/programs/${id}`), 200)).name).toBe('fle.olleh');
  });

  it('projects (the bare JSON string the published client sends, and {"name"})', async () => {
    const t = await seedTenant();
    refusedName(await json(await api(t, '/v1/projects', jsonInit(SPOOF)), 422), ['body']);
    refusedName(await json(await api(t, '/v1/projects', jsonInit({ name: 'line\nbreak' })), 422), ['body']);
    await json(await api(t, '/v1/projects', jsonInit('a plain project')), 201);
  });

  it('webhook endpoints’ descriptions, through /v1 and the console', async () => {
    const t = await seedTenant();
    const admin = await signIn(await seedUser(t.orgId, 'admin'));
    const body = { url: 'https://hooks.example.com/x', description: SPOOF };
    refusedName(await json(await api(t, '/v1/webhooks', jsonInit(body)), 422), ['body', 'description']);
    refusedName(await send(admin, 'POST', `/console/v1/orgs/${t.orgId}/webhooks`, body, 422), ['body', 'description']);
    const made = await send(admin, 'POST', `/console/v1/orgs/${t.orgId}/webhooks`, { url: body.url }, 201);
    refusedName(await send(admin, 'PATCH', `/console/v1/orgs/${t.orgId}/webhooks/${made.id}`, { description: SPOOF }, 422), [
      'body',
      'description',
    ]);
  });

  it('a user’s name when an invitation makes the account; an organization’s and a user’s through the operator tool', async () => {
    const t = await seedTenant();
    const owner = await signIn(await seedUser(t.orgId, 'owner'));
    const email = uniqueEmail('named');
    await send(owner, 'POST', `/console/v1/orgs/${t.orgId}/invites`, { email, role: 'member' }, 201);
    const { mailedToken } = await import('./console-helpers.ts');
    const body = await json(
      await postJson('/console/v1/auth/accept-invite', { token: await mailedToken(email), password: 'a long password', name: SPOOF }),
      422,
    );
    refusedName(body, ['body', 'name']);
    expect(() => createOrganization(`Acme${RLO}`)).toThrow(/control or bidirectional formatting characters \(found U\+202E\)/);
    await expect(createUser({ email: uniqueEmail(), orgId: t.orgId, role: 'member', name: 'x\u2066', consoleUrl: BASE })).rejects.toThrow(
      /U\+2066/,
    );
  });
});

describe('what a key does is recorded as the person who made it, its name beside it', () => {
  it('created_by and the audit log name the creator’s email, never the key’s name alone', async () => {
    const t = await seedTenant();
    const admin = await signIn(await seedUser(t.orgId, 'admin'));
    const made = await send(admin, 'POST', `/console/v1/orgs/${t.orgId}/api-keys`, { name: 'deploy bot' }, 201);
    const key = { ...t, key: made.key as string };
    const { id: project } = await json(await api(key, '/v1/projects', jsonInit('by a key')), 201);
    expect((await json(await api(key, `/v1/projects/${project}`), 200)).created_by).toBe(`${admin.email} (key "deploy bot")`);
    const endpoint = await json(await api(key, '/v1/webhooks', jsonInit({ url: 'https://hooks.example.com/y' })), 201);
    expect(endpoint.created_by).toBe(`${admin.email} (key "deploy bot")`);
    const [entry] = (await as(admin, `/console/v1/orgs/${t.orgId}/audit`)).items;
    expect(entry).toMatchObject({ action: 'webhook.create', actor: `${admin.email} (API key ${made.prefix}… "deploy bot")` });
    const row = await env.DB.prepare(`SELECT actor_user_id FROM audit_log WHERE org_id = ? AND action = 'webhook.create'`)
      .bind(t.orgId)
      .first<{ actor_user_id: string }>();
    expect(row!.actor_user_id).toBe(admin.userId);
  });
});

describe('the console shows people’s text escaped', () => {
  it('a name stored before the check reads as what it holds, in tables and facts', async () => {
    expect(shownText(`admin@a.example (${SPOOF})`)).toBe('admin@a.example (⟨U+202E⟩)elpmaxe.a@renwo()');
    expect(shownText('plain – ελέγχος')).toBe('plain – ελέγχος');
    const html = String(
      await DataTable({
        id: 'keys',
        caption: 'Keys',
        columns: [{ header: 'Name', cell: (r: { name: string }) => r.name }],
        rows: [{ name: SPOOF }],
      }),
    );
    expect(html).toContain('⟨U+202E⟩)elpmaxe.a@renwo(');
    expect(html).not.toContain(RLO);
  });
});
