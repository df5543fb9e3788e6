// Our own attacker: every route the app serves (its route table, so a route added later
// is walked without editing this file), called with every credential we can hold as
// organization A, aimed at organization B's records (two organizations with a record of
// every kind). Every answer must refuse (401/403/404, or 400/405/422 for a shape refusal):
// never 2xx carrying B's data, never 500; and B's rows must be unchanged afterwards.
//
// Then, inside A: each lesser console role (viewer, member, admin) on every organization
// route, and each API key scope (read, prove, and a member's full key) on every /v1 route,
// get 403 wherever the one permissions table (src/auth/permissions.ts) says their rights
// fall short of the action the route declares (its door, read from app.routes), and A's
// rows are unchanged. expectedFor(route, credential, variant) is the one place that says
// what an answer may be.
import { env } from 'cloudflare:test';
import { exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { createApiKey, revokeApiKey } from '../../src/admin/statements.ts';
import { keyRights, PERMISSIONS, rankOf, type KeyScope, type Role } from '../../src/auth/permissions.ts';
import { declarationOf, routeKey, servedRoutes, type Route } from './routes.ts';
import { as, CSRF, postJson, seedUser, send, sessionOf, signIn, uniqueEmail, type Session } from './console-helpers.ts';
import { seedAgent } from './fleet-helpers.ts';
import {
  api,
  BASE,
  guest,
  json,
  markReady,
  programForm,
  registerProgram,
  runAdmin,
  seedConfig,
  seedTenant,
  VMEXE,
  type Tenant,
} from './helpers.ts';

// ---------------------------------------------------------------------------
// The routes

const key = routeKey;

type Surface = 'api' | 'console' | 'console-auth' | 'fleet' | 'download';

/** Which API a path belongs to (each has its own credential); null: not walked (public pages, documents). */
function surfaceOf(path: string): Surface | null {
  // The local mail outbox reads everyone's mail, as the mail it stands in for would: it
  // exists only under MAIL_SENDER = "outbox" (npm start and the tests; a deployed
  // environment's vars never set it) and is 404 anywhere else (console-identity.test.ts).
  if (path === '/console/v1/outbox') return null;
  if (path.startsWith('/v1/')) return 'api';
  if (path.startsWith('/console/v1/auth/')) return 'console-auth';
  if (path.startsWith('/console/v1/')) return 'console';
  if (path.startsWith('/internal/v1/')) return 'fleet';
  if (path.startsWith('/downloads/')) return 'download';
  // Public by design, holding no organization's data: the console's page shells (their
  // data comes from /console/v1), /openapi.json, /docs, /healthz.
  return null;
}

/** Every method and path the app serves under the walked APIs. */
const walkedRoutes = (): Route[] => servedRoutes().filter((r) => surfaceOf(r.path));

// ---------------------------------------------------------------------------
// Two organizations, with a record of every kind

/** The path parameters naming an organization's records, and which record of the world fills each. */
const ORG_SCOPED_PARAMS = [
  'org_id',
  'project_id',
  'program_id',
  'proof_id',
  'execution_id',
  'verify_id',
  'webhook_id',
  'delivery_id',
  'user_id',
  'invite_id',
  'key_id',
  // Not an organization's but a person's: B's owner's console session.
  'session_id',
] as const;
type OrgParam = (typeof ORG_SCOPED_PARAMS)[number];
type Ids = Record<OrgParam, string>;

/** Path parameters that name no organization's record: filled with a plausible value (a refusal for its shape is allowed). */
const SHAPE_PARAMS: Record<string, (w: World) => string> = {
  config_id: (w) => w.configId, // configs are the service's, shared by every organization
  artifact: () => 'elf',
  kind: () => 'stark',
  name: () => 'app_pk',
  upload_id: () => 'upl_walked',
  part_number: () => '1',
  version: () => '1',
};

interface Org {
  tenant: Tenant;
  owner: Session;
  ids: Ids;
  /** Strings that must never appear in an answer given to the other organization. */
  markers: string[];
}

interface World {
  configId: string;
  a: Org;
  b: Org;
  /** A's console sessions of the lesser roles. */
  lesser: Record<'viewer' | 'member' | 'admin', Session>;
  /** A's API keys of the lesser scopes, by name: their rights as a role. */
  scopedKeys: { name: string; key: string; rights: Role }[];
  revokedKey: string;
  signedOut: Session;
  agentToken: string;
}

const HOOK = 'http://127.0.0.1:9/hook';
const STARK = JSON.stringify({ version: 'v1.1', proof: 'abcd', user_pvs_proof: '0011', deferral_merkle_proofs: null });
const jsonInit = (body: unknown, method = 'POST'): RequestInit => ({
  method,
  body: JSON.stringify(body),
  headers: { 'content-type': 'application/json' },
});

function proofForm(text: string) {
  const form = new FormData();
  form.append('proof', new File([text], 'proof.json', { type: 'application/json' }));
  return form;
}

/** An organization with one record of every kind, made through the API as a customer would. */

async function seedOrg(label: string, configId: string): Promise<Org> {
  const tenant = await seedTenant(uniqueEmail(`${label}-owner`));
  const owner = await signIn(await seedUser(tenant.orgId, 'owner'));
  const program = await registerProgram(tenant, configId, `&program_name=${label}-guest&project_name=${label}-project`);
  await markReady(program);
  const { project_id } = await json(await api(tenant, `/v1/programs/${program}`), 200);
  const input = { input: ['0x0148656c6c6f'] };
  const [{ id: proof }, { id: execution }, { id: verification }, webhook] = await Promise.all([
    json(await api(tenant, `/v1/proofs?program_id=${program}`, jsonInit(input)), 200),
    json(await api(tenant, `/v1/executions?program_id=${program}`, jsonInit(input)), 200),
    json(await api(tenant, `/v1/verify/stark?program_id=${program}`, { method: 'POST', body: proofForm(STARK) }), 200),
    json(await api(tenant, '/v1/webhooks', jsonInit({ url: HOOK, description: `${label} endpoint` })), 201),
  ]);
  // A delivery that is over (nothing in the background will touch it again).
  const delivery = `msg_${crypto.randomUUID().replace(/-/g, '')}`;
  await env.DB.prepare(
    `INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_type, subject_kind, subject_id, status, attempts, next_attempt_at, payload) VALUES (?, ?, ?, 'webhook.test', 'test', ?, 'failed', 1, ?, '{}')`,
  )
    .bind(delivery, tenant.orgId, webhook.id, webhook.id, Date.now())
    .run();
  const member = await signIn(await seedUser(tenant.orgId, 'member'));
  const apiKey = await send(member, 'POST', `/console/v1/orgs/${tenant.orgId}/api-keys`, { name: `${label} key` }, 201);
  const invite = await send(
    owner,
    'POST',
    `/console/v1/orgs/${tenant.orgId}/invites`,
    { email: uniqueEmail(`${label}-invitee`), role: 'member' },
    201,
  );
  const ids: Ids = {
    org_id: tenant.orgId,
    project_id,
    program_id: program,
    proof_id: proof,
    execution_id: execution,
    verify_id: verification,
    webhook_id: webhook.id,
    delivery_id: delivery,
    user_id: member.userId,
    invite_id: invite.id,
    key_id: apiKey.id,
    session_id: sessionOf(owner),
  };
  const markers = [
    ...Object.values(ids),
    tenant.key,
    apiKey.key,
    webhook.secret,
    owner.email,
    member.email,
    invite.email,
    `${label}-project`,
    `${label}-guest`,
  ];
  return { tenant, owner, ids, markers };
}

async function seedWorld(): Promise<World> {
  const configId = await seedConfig();
  const [a, b] = await Promise.all([seedOrg('walker-a', configId), seedOrg('walker-b', configId)]);
  const [viewer, member, admin] = await Promise.all(
    (['viewer', 'member', 'admin'] as const).map(async (role) => signIn(await seedUser(a.tenant.orgId, role))),
  );
  const lesser = { viewer: viewer, member: member, admin: admin };
  // Keys of each scope made by A's owner, and a full key made by a member (bounded by the member's role).
  const keyOf = async (by: Session, scope: KeyScope) =>
    (await send(by, 'POST', `/console/v1/orgs/${a.tenant.orgId}/api-keys`, { name: `walker ${scope}`, scope }, 201)).key as string;
  const scopedKeys = [
    { name: 'read key of A', key: await keyOf(a.owner, 'read'), rights: keyRights('read', 'owner') },
    { name: 'prove key of A', key: await keyOf(a.owner, 'prove'), rights: keyRights('prove', 'owner') },
    { name: "member's full key of A", key: await keyOf(lesser.member, 'full'), rights: keyRights('full', 'member') },
  ];
  const revokedKey = await runAdmin(createApiKey(a.tenant.orgId, 'revoked'));
  await runAdmin(revokeApiKey(revokedKey));
  const signedOut = await signIn(await seedUser(a.tenant.orgId, 'owner'));
  await json(await postJson('/console/v1/auth/signout', {}, { cookie: signedOut.cookie }), 200);
  const { token: agentToken } = await seedAgent();
  return { configId, a, b, lesser, scopedKeys, revokedKey, signedOut, agentToken };
}

// ---------------------------------------------------------------------------
// B's rows, before and after

/**
 * Every row of every table with an org_id that belongs to the organization, its
 * organization row, its members' accounts and sessions, and its records' R2 objects.
 */
async function fingerprint(ids: Ids): Promise<Record<string, unknown[]>> {
  const orgId = ids.org_id;
  const tables = await env.DB.prepare(
    // D1 allows no pragma; a table's CREATE text (ALTERs included) names its columns.
    "SELECT name FROM sqlite_master WHERE type = 'table' AND (sql LIKE '%`org_id` text%' OR sql LIKE '%\"org_id\" text%') ORDER BY name",
  ).all<{ name: string }>();
  const reads = [
    ...tables.results.map(
      (t) => [t.name, env.DB.prepare(`SELECT * FROM "${t.name}" WHERE org_id = ? ORDER BY rowid`).bind(orgId)] as const,
    ),
    ['organizations', env.DB.prepare('SELECT * FROM organizations WHERE id = ?').bind(orgId)] as const,
    [
      'users',
      env.DB.prepare('SELECT u.* FROM users u JOIN memberships m ON m.user_id = u.id WHERE m.org_id = ? ORDER BY u.id').bind(orgId),
    ] as const,
    [
      'console_sessions',
      env.DB.prepare(
        'SELECT s.* FROM console_sessions s JOIN memberships m ON m.user_id = s.user_id WHERE m.org_id = ? ORDER BY s.id',
      ).bind(orgId),
    ] as const,
  ];
  expect(reads.length).toBeGreaterThan(10);
  const results = await env.DB.batch(reads.map(([, stmt]) => stmt));
  const prefixes = [
    `programs/${ids.program_id}/`,
    `proofs/${ids.proof_id}/`,
    `executions/${ids.execution_id}/`,
    `verifications/${ids.verify_id}/`,
  ];
  const objects = (await Promise.all(prefixes.map((prefix) => env.ARTIFACTS.list({ prefix })))).flatMap((l) =>
    l.objects.map((o) => `${o.key} ${o.size} ${o.etag}`),
  );
  expect(objects.length).toBeGreaterThanOrEqual(4);
  return { ...Object.fromEntries(reads.map(([name], i) => [name, results[i].results])), r2: objects };
}

// ---------------------------------------------------------------------------
// Requests: templates for what a route needs besides its path

type Expect = 'refused' | 'clean';

interface Template {
  /** What the path parameters name: B's records (default), or A's own (the foreign ids are then in the query or body). */
  params?: 'foreign' | 'own';
  query?: (w: World) => string;
  body?: (w: World) => { body: BodyInit; type?: string };
  /**
   * refused: a credential valid on the route gets a refusal. clean: the request names no
   * record of B's that it could reach (a list of one's own, a global config, a creation in
   * one's own organization): any answer below 500, a 2xx carrying nothing of B's.
   */
  expect: Expect;
  /** More statuses a refusal may have here, with the reason in a comment. */
  alsoAllowed?: number[];
  /** It acts on the caller's own account only (sign out everywhere): a valid credential would really act, and is not sent. */
  ownAccountOnly?: true;
}

const jsonBody = (value: unknown) => () => ({ body: JSON.stringify(value), type: 'application/json' });
const B = (w: World) => w.b.ids;

/**
 * Routes whose request needs more than path parameters: those with no organization-scoped
 * path parameter (their foreign reference, if any, is in the query or body; or they are
 * declared clean), and those whose body is required (so the refusal met is the owner
 * check, not a shape refusal). The walk fails for a route that needs one and has none.
 */
const TEMPLATES: Record<string, Template[]> = {
  'GET /v1/validate_api_key': [{ expect: 'clean' }],
  'POST /v1/programs': [
    {
      query: (w) => `?config_id=${w.configId}&project_id=${B(w).project_id}&program_name=walked`,
      body: () => ({ body: programForm(guest('hello.elf'), VMEXE) }),
      expect: 'refused',
    },
  ],
  'GET /v1/programs': [{ query: (w) => `?project_id=${B(w).project_id}`, expect: 'clean' }],
  'PUT /v1/programs/:program_id': [
    { body: jsonBody({ name: 'walked' }), expect: 'refused' },
    // Moving one's own program into B's project.
    { params: 'own', body: (w) => jsonBody({ project_id: B(w).project_id })(), expect: 'refused' },
  ],
  'GET /v1/projects': [{ expect: 'clean' }],
  'POST /v1/projects': [{ body: jsonBody('walked-project'), expect: 'clean' }],
  'POST /v1/proofs': [{ query: (w) => `?program_id=${B(w).program_id}`, body: jsonBody({ input: ['0x0148656c6c6f'] }), expect: 'refused' }],
  'GET /v1/proofs': [{ query: (w) => `?program_id=${B(w).program_id}`, expect: 'clean' }],
  'GET /v1/configs/:config_id': [{ expect: 'clean' }],
  'GET /v1/configs/:config_id/:artifact': [{ expect: 'clean' }],
  'GET /v1/configs/:config_id/pk/:kind': [{ expect: 'clean' }],
  'GET /v1/configs/:config_id/vk/:kind': [{ expect: 'clean' }],
  'POST /v1/verify': [{ query: (w) => `?program_id=${B(w).program_id}`, body: () => ({ body: proofForm(STARK) }), expect: 'refused' }],
  'POST /v1/verify/stark': [
    { query: (w) => `?program_id=${B(w).program_id}`, body: () => ({ body: proofForm(STARK) }), expect: 'refused' },
  ],
  'POST /v1/executions': [
    { query: (w) => `?program_id=${B(w).program_id}`, body: jsonBody({ input: ['0x0148656c6c6f'] }), expect: 'refused' },
  ],
  'GET /v1/executions': [{ query: (w) => `?program_id=${B(w).program_id}`, expect: 'clean' }],
  'POST /v1/webhooks': [{ body: jsonBody({ url: HOOK, description: 'walked' }), expect: 'clean' }],
  'GET /v1/webhooks': [{ expect: 'clean' }],
  'PATCH /v1/webhooks/:webhook_id': [{ body: jsonBody({ description: 'walked', disabled: true }), expect: 'refused' }],
  'GET /console/v1/me': [{ expect: 'clean' }],
  'GET /console/v1/me/sessions': [{ expect: 'clean' }],
  'DELETE /console/v1/me/sessions': [{ expect: 'clean', ownAccountOnly: true }],
  'GET /console/v1/orgs': [{ expect: 'clean' }],
  'POST /console/v1/me/password': [
    { body: jsonBody({ current_password: 'not the password', new_password: 'walked password 1' }), expect: 'clean' },
  ],
  'GET /console/v1/fleet': [{ expect: 'clean' }],
  'PATCH /console/v1/orgs/:org_id/members/:user_id': [{ body: jsonBody({ role: 'owner' }), expect: 'refused' }],
  'POST /console/v1/orgs/:org_id/invites': [{ body: jsonBody({ email: 'walked@example.com', role: 'owner' }), expect: 'refused' }],
  'POST /console/v1/orgs/:org_id/api-keys': [{ body: jsonBody({ name: 'walked' }), expect: 'refused' }],
  'POST /console/v1/orgs/:org_id/webhooks': [{ body: jsonBody({ url: HOOK, description: 'walked' }), expect: 'refused' }],
  'PATCH /console/v1/orgs/:org_id/webhooks/:webhook_id': [{ body: jsonBody({ description: 'walked', disabled: true }), expect: 'refused' }],
  'PUT /console/v1/orgs/:org_id/budget': [{ body: jsonBody({ monthly_cost: 1 }), expect: 'refused' }],
  // A default cycle limit of one would fail every job of B's that names none.
  'PUT /console/v1/orgs/:org_id/limits': [{ body: jsonBody({ default_cycle_limit: 1 }), expect: 'refused' }],
  // A retention of one day would have B's files deleted by the next sweep.
  'PUT /console/v1/orgs/:org_id/retention': [{ body: jsonBody({ retention_days: 1 }), expect: 'refused' }],
  // Lists of one's own organization filtered by B's records: nothing of B's comes back.
  'GET /console/v1/orgs/:org_id/programs': [
    { expect: 'refused' },
    { params: 'own', query: (w) => `?project_id=${B(w).project_id}`, expect: 'clean' },
  ],
  'GET /console/v1/orgs/:org_id/proofs': [
    { expect: 'refused' },
    { params: 'own', query: (w) => `?program_id=${B(w).program_id}`, expect: 'clean' },
  ],
  'GET /console/v1/orgs/:org_id/executions': [
    { expect: 'refused' },
    { params: 'own', query: (w) => `?program_id=${B(w).program_id}`, expect: 'clean' },
  ],
  'GET /console/v1/orgs/:org_id/verifications': [
    { expect: 'refused' },
    { params: 'own', query: (w) => `?program_id=${B(w).program_id}`, expect: 'clean' },
  ],
  // The auth routes take no credential; they are reached with B's account and made-up tokens.
  'POST /console/v1/auth/signin': [
    { body: (w) => jsonBody({ email: w.b.owner.email, password: 'a wrong guess' })(), expect: 'refused', alsoAllowed: [429] },
  ], // throttled after 5 guesses
  'POST /console/v1/auth/refresh': [{ expect: 'refused' }],
  'POST /console/v1/auth/signout': [{ expect: 'clean' }],
  'POST /console/v1/auth/set-password': [
    { body: jsonBody({ token: `pw_${'0'.repeat(64)}`, password: 'walked password 1' }), expect: 'refused' },
  ],
  'POST /console/v1/auth/invite': [{ body: jsonBody({ token: `inv_${'0'.repeat(64)}` }), expect: 'refused' }],
  // Same answer whoever asks; the link goes to B's owner's mail, never to the caller.
  'POST /console/v1/auth/password-reset': [{ body: (w) => jsonBody({ email: w.b.owner.email })(), expect: 'clean', alsoAllowed: [429] }],
  'POST /console/v1/auth/reset-password': [
    { body: jsonBody({ token: `pwr_${'0'.repeat(64)}`, password: 'walked password 1' }), expect: 'refused' },
  ],
  'POST /console/v1/auth/accept-invite': [
    { body: jsonBody({ token: `inv_${'0'.repeat(64)}`, password: 'walked password 1' }), expect: 'refused' },
  ],
  // The heartbeat resolves its token in the batch that records the beat (one round trip),
  // after its bounded body is parsed: a well-formed body reaches the token check.
  'POST /internal/v1/lease/heartbeat': [{ body: jsonBody({}), expect: 'refused' }],
  // The signature is the credential: a well-formed made-up one reaches its check.
  'GET /downloads/configs/:config_id/:name/:version': [
    { query: () => `?expires=${Math.floor(Date.now() / 1000) + 3600}&signature=${'0'.repeat(64)}`, expect: 'refused' },
  ],
};

/** Fleet and download routes: no credential an organization holds is valid there, so the body rarely matters. */
const NEEDS_NO_TEMPLATE: Surface[] = ['fleet', 'download'];

const paramsOf = (path: string) => [...path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]);
const isOrgParam = (p: string): p is OrgParam => (ORG_SCOPED_PARAMS as readonly string[]).includes(p);

interface OpenApiOp {
  requestBody?: { required?: boolean };
  parameters?: { in: string; required?: boolean }[];
}

/** What is wrong with the walker's knowledge of a route (it must then be taught): '' when nothing. */
function untaught(route: Route, doc: Record<string, Record<string, OpenApiOp>>): string {
  const params = paramsOf(route.path);
  const unknown = params.filter((p) => !isOrgParam(p) && !SHAPE_PARAMS[p]);
  if (unknown.length) return `${key(route)}: path parameter(s) ${unknown.join(', ')} are in neither ORG_SCOPED_PARAMS nor SHAPE_PARAMS`;
  const surface = surfaceOf(route.path)!;
  if (NEEDS_NO_TEMPLATE.includes(surface) || TEMPLATES[key(route)]) return '';
  if (!params.some(isOrgParam))
    return `${key(route)}: names no organization's record in its path: add a template (B's ids in its query or body, or declared clean)`;
  const op = doc[route.path.replace(/:([A-Za-z_]+)/g, '{$1}')]?.[route.method.toLowerCase()];
  if (op?.requestBody?.required || op?.parameters?.some((p) => p.in === 'query' && p.required))
    return `${key(route)}: needs a body or query: add a template`;
  return '';
}

// ---------------------------------------------------------------------------
// Credentials, and what each may get

interface Credential {
  name: string;
  /** The API this credential is valid on; null: valid nowhere. */
  validOn: Surface | null;
  headers: (w: World) => Record<string, string>;
  /** What it may do in A, as a role: a console session's role, or an API key's rights (scope bounded by its creator's role). */
  role?: Role;
  /** Routes it is not sent to. */
  skip?: (route: Route) => boolean;
}

const CREDENTIALS: Credential[] = [
  { name: 'api key of A', validOn: 'api', headers: (w) => ({ 'Service-API-Key': w.a.tenant.key }) },
  { name: 'console owner of A', validOn: 'console', role: 'owner', headers: (w) => ({ authorization: `Bearer ${w.a.owner.token}` }) },
  { name: 'no credentials', validOn: null, headers: () => ({}) },
  { name: 'revoked api key of A', validOn: null, headers: (w) => ({ 'Service-API-Key': w.revokedKey }) },
  { name: 'signed-out console session of A', validOn: null, headers: (w) => ({ authorization: `Bearer ${w.signedOut.token}` }) },
  {
    name: 'agent token',
    validOn: null,
    headers: (w) => ({ authorization: `Bearer ${w.agentToken}` }),
    skip: (r) => surfaceOf(r.path) === 'fleet',
  },
  { name: 'api key of A as a bearer token', validOn: null, headers: (w) => ({ authorization: `Bearer ${w.a.tenant.key}` }) },
];

/** Statuses a refusal may have: not authenticated, forbidden, not found; or refused for its shape. */
const REFUSED = [400, 401, 403, 404, 405, 422];
/** A credential not valid on an API: refused before anything else is looked at. */
const UNAUTHENTICATED: Record<Surface, number[]> = {
  api: [401],
  console: [401],
  'console-auth': [], // takes no credential: the template decides
  // The fleet's routes and downloads check their own token or signature, some after reading the path's config.
  fleet: [401, 403, 404],
  download: [401, 403, 404],
};

/**
 * The action or role-free door each route declares (at its door in app.routes, as
 * test/worker/permissions.test.ts finds them): what the permissions table is asked of.
 */
function declaredActions(): Map<string, string> {
  const declared = new Map<string, string>();
  for (const route of walkedRoutes()) {
    const need = declarationOf(route)?.need;
    if (need) declared.set(key(route), need);
  }
  return declared;
}
const DECLARED = declaredActions();

/** The least role a route's action needs (undefined: a door that needs no role in an organization). */
function roleNeeded(route: Route): Role | undefined {
  const need = DECLARED.get(key(route));
  return need && need in PERMISSIONS ? PERMISSIONS[need as keyof typeof PERMISSIONS].least : undefined;
}

interface Variant {
  label: string;
  ids: Ids;
  template: Template;
  /** Whether it reaches for B's records (false: the caller's own organization's, to test roles). */
  foreign: boolean;
}

type Expectation = { statuses: number[]; clean?: false } | { statuses: 'below 500'; clean: true };

/**
 * What `credential` may get from `route` in `variant`: the one place the walk's rules
 * live. null: not sent (the request would really act, as the credential may).
 */
function expectedFor(route: Route, credential: Credential, variant: Variant): Expectation | null {
  const surface = surfaceOf(route.path)!;
  if (credential.skip?.(route)) return null;
  if (surface !== 'console-auth' && credential.validOn !== surface) return { statuses: UNAUTHENTICATED[surface] };
  if (variant.template.ownAccountOnly) return null;
  if (!variant.foreign) {
    // One's own organization's records: only a role below the route's is refused; other
    // requests would really act, as the credential may, and are not sent. (An API key's
    // scope is the same question on the 'api' surface, asked of the permissions table.)
    const needed = roleNeeded(route);
    return credential.role && needed && rankOf(credential.role) < rankOf(needed) ? { statuses: [403] } : null;
  }
  if (variant.template.expect === 'clean') return { statuses: 'below 500', clean: true };
  return { statuses: [...REFUSED, ...(variant.template.alsoAllowed ?? [])] };
}

/** The requests a route gets: at B's records, and at B's records from inside A's own organization. */
function variantsOf(route: Route, w: World): Variant[] {
  const templates = TEMPLATES[key(route)] ?? [{ expect: 'refused' as const }];
  const params = paramsOf(route.path);
  const variants: Variant[] = [];
  for (const template of templates) {
    if (template.params === 'own') {
      variants.push({ label: "A's own path, B's ids in the request", ids: w.a.ids, template, foreign: true });
      continue;
    }
    variants.push({ label: "B's records", ids: w.b.ids, template, foreign: true });
    // B's record under A's organization (the console's paths name both).
    if (params.includes('org_id') && params.some((p) => p !== 'org_id' && isOrgParam(p)))
      variants.push({ label: "B's records under A's organization", ids: { ...w.b.ids, org_id: w.a.ids.org_id }, template, foreign: true });
  }
  return variants;
}

function urlOf(route: Route, variant: Variant, w: World): string {
  const path = route.path.replace(/:([A-Za-z_]+)/g, (_, p: string) =>
    encodeURIComponent(isOrgParam(p) ? variant.ids[p] : SHAPE_PARAMS[p](w)),
  );
  return path + (variant.template.query?.(w) ?? '');
}

interface Outcome {
  what: string;
  status: number;
  problem: string;
}

async function call(route: Route, credential: Credential, variant: Variant, expected: Expectation, w: World): Promise<Outcome> {
  const url = urlOf(route, variant, w);
  // From the walk's own addresses, one per route: the password guesses it makes (B's
  // owner's, A's current password) count against them, not against the address other test
  // files sign in from, and no address meets its budget of refused credentials (the door's).
  const headers = new Headers({ ...CSRF, origin: BASE, 'cf-connecting-ip': walkerAddress(route), ...credential.headers(w) });
  const made = variant.template.body?.(w);
  if (made?.type) headers.set('content-type', made.type);
  const res = await exports.default.fetch(new Request(BASE + url, { method: route.method, headers, body: made?.body }));
  const what = `${route.method} ${url} [${variant.label}] as ${credential.name}`;
  // Never read an event stream to its end: it would not end.
  const text = res.headers.get('content-type')?.includes('text/event-stream') ? (await res.body?.cancel(), '') : await res.text();
  let problem = '';
  if (res.status >= 500) problem = `${res.status}: ${text.slice(0, 200)}`;
  else if (expected.clean) {
    const leaked = res.ok ? w.b.markers.filter((m) => text.includes(m)) : [];
    if (leaked.length) problem = `${res.status} carrying B's ${leaked.join(', ')}`;
  } else if (!expected.statuses.includes(res.status))
    problem = `${res.status} (expected one of ${expected.statuses.join('/')}): ${text.slice(0, 200)}`;
  return { what, status: res.status, problem };
}

// ---------------------------------------------------------------------------

/** The walk's address for a route: one of 198.18.0.0/16 (benchmarking addresses), by the route's place in the walk. */
function walkerAddress(route: Route): string {
  const at = walkedRoutes().findIndex((r) => key(r) === key(route));
  return `198.18.${(at >> 8) & 255}.${at & 255}`;
}

/** Routes walked at once (a few hundred requests in flight at most). */
const ROUTES_AT_ONCE = 25;

describe('the attacker in the suite', () => {
  it('knows every route: each path parameter is classified, each route that needs a template has one', async () => {
    const doc = await json(await api(null, '/openapi.json'), 200);
    const routes = walkedRoutes();
    expect(routes.length).toBeGreaterThan(90);
    expect(routes.map((r) => untaught(r, doc.paths)).filter(Boolean)).toEqual([]);
    // Every /v1 and console organization route declares an action of the permissions
    // table, and no template names a route that is gone.
    const orgRoutes = routes.filter((r) => r.path.startsWith('/console/v1/orgs/') || r.path.startsWith('/v1/')).map(key);
    expect(orgRoutes.filter((k) => !(DECLARED.get(k)! in PERMISSIONS))).toEqual([]);
    const served = new Set(routes.map(key));
    expect(Object.keys(TEMPLATES).filter((k) => !served.has(k))).toEqual([]);
  });

  it(
    'walks every route with every credential at the other organization: refused, nothing of B’s, B unchanged',
    { timeout: 300_000 },
    async () => {
      const w = await seedWorld();
      const before = await fingerprint(w.b.ids);
      const routes = walkedRoutes();
      const outcomes: Outcome[] = [];
      let sent = 0;
      // A few routes at a time, each with its credentials and variants together.
      for (let i = 0; i < routes.length; i += ROUTES_AT_ONCE) {
        const calls: Promise<Outcome>[] = [];
        for (const route of routes.slice(i, i + ROUTES_AT_ONCE))
          for (const variant of variantsOf(route, w))
            for (const credential of CREDENTIALS) {
              const expected = expectedFor(route, credential, variant);
              if (expected) calls.push(call(route, credential, variant, expected, w));
            }
        sent += calls.length;
        outcomes.push(...(await Promise.all(calls)));
      }
      console.log(`attacker walk: ${routes.length} routes × ${CREDENTIALS.length} credentials (with variants): ${sent} requests`);
      expect(outcomes.filter((o) => o.problem).map((o) => `${o.what}: ${o.problem}`)).toEqual([]);
      // Every valid credential met a refusal somewhere (the walk reached past authentication).
      expect(outcomes.some((o) => o.what.endsWith('as api key of A') && o.status === 404)).toBe(true);
      expect(outcomes.some((o) => o.what.endsWith('as console owner of A') && o.status === 404)).toBe(true);
      expect(await fingerprint(w.b.ids)).toEqual(before);
    },
  );

  it(
    'each lesser role and key scope gets 403 wherever the permissions table says its rights fall short, in its own organization',
    { timeout: 300_000 },
    async () => {
      const w = await seedWorld();
      const lesser: Credential[] = [
        ...(['viewer', 'member', 'admin'] as const).map((role): Credential => ({
          name: `console ${role} of A`,
          validOn: 'console',
          role,
          headers: (x) => ({ authorization: `Bearer ${x.lesser[role].token}` }),
        })),
        ...w.scopedKeys.map((k): Credential => ({
          name: k.name,
          validOn: 'api',
          role: k.rights,
          headers: () => ({ 'Service-API-Key': k.key }),
        })),
      ];
      const before = await fingerprint(w.a.ids);
      const routes = walkedRoutes().filter((r) => r.path.startsWith('/console/v1/orgs/') || r.path.startsWith('/v1/'));
      const calls: Promise<Outcome>[] = [];
      const refusedTo = new Map<string, number>();
      for (const route of routes)
        for (const credential of lesser) {
          if (credential.validOn !== surfaceOf(route.path)) continue;
          const template = (TEMPLATES[key(route)] ?? []).find((t) => t.params !== 'own') ?? { expect: 'refused' as const };
          const variant: Variant = { label: "A's own records", ids: w.a.ids, template: { ...template, query: undefined }, foreign: false };
          const expected = expectedFor(route, credential, variant);
          if (!expected) continue;
          refusedTo.set(credential.name, (refusedTo.get(credential.name) ?? 0) + 1);
          calls.push(call(route, credential, variant, expected, w));
        }
      const outcomes = await Promise.all(calls);
      console.log(
        `lesser roles and scopes: ${routes.length} routes × ${lesser.length} credentials; refused as the table says: ${[...refusedTo].map(([n, k]) => `${n} ${k}`).join(', ')}`,
      );
      // The table refuses each of them something (a viewer and a read key most of all; an
      // admin is refused only owners' business, which members.ts checks per target role).
      for (const credential of lesser.filter((l) => l.role !== 'admin'))
        expect(refusedTo.get(credential.name) ?? 0, credential.name).toBeGreaterThan(0);
      expect(refusedTo.get('console viewer of A')!).toBeGreaterThan(refusedTo.get('console member of A')!);
      expect(outcomes.filter((o) => o.problem).map((o) => `${o.what}: ${o.problem}`)).toEqual([]);
      expect(await fingerprint(w.a.ids)).toEqual(before);
      // The same routes answer the owner (the 403s were about the role, not the request).
      await as(w.a.owner, `/console/v1/orgs/${w.a.ids.org_id}/members`);
    },
  );
});
