import { describe, expect, it } from 'vitest';
import { app } from '../../src/app.ts';
import { api, BASE, json } from './helpers.ts';
import { WEBHOOK_EVENTS } from '../../src/db/schema.ts';

/** Hono route path → OpenAPI path (`:id` → `{id}`). */
const toOpenApi = (path: string) => path.replace(/:([A-Za-z_]+)/g, '{$1}');

/** The routes the app serves under `prefix` that the document at `url` does not describe. */
async function undocumented(url: string, prefix: string) {
  const doc = await json(await api(null, url), 200);
  const documented = new Set<string>();
  for (const [path, ops] of Object.entries<Record<string, unknown>>(doc.paths))
    for (const method of Object.keys(ops)) documented.add(`${method.toUpperCase()} ${path}`);
  const served = app.routes
    .filter((r) => r.path.startsWith(prefix) && r.method !== 'ALL' && !r.path.includes('*'))
    .map((r) => `${r.method} ${toOpenApi(r.path).replace(/\/$/, '')}`);
  expect(served.length).toBeGreaterThan(20);
  return { doc, missing: served.filter((r) => !documented.has(r)), documented };
}

describe('OpenAPI document', () => {
  it('covers every /v1 route the app serves, with the interface version, and no console route', async () => {
    const { doc, missing, documented } = await undocumented('/openapi.json', '/v1/');
    expect(doc.info.version).toBe('2.0.0');
    expect(missing).toEqual([]);
    expect([...documented].filter((r) => r.includes('/console/'))).toEqual([]);
    expect(doc.servers).toEqual([{ url: BASE }]);
  });

  it('the console’s API is a reference of its own, at /openapi/console.json and /docs/console', async () => {
    // The console's outbox is served only under the local outbox sender, and not documented.
    const { doc, missing } = await undocumented('/openapi/console.json', '/console/v1/');
    expect(missing.filter((r) => !r.includes('/outbox'))).toEqual([]);
    expect(doc.info.title).toBe('Proving service console API');
    expect(Object.keys(doc.paths).every((p) => p.startsWith('/console/v1/'))).toBe(true);
    expect(doc.webhooks).toBeUndefined();
    expect(Object.keys(doc.components.securitySchemes)).toEqual(['ConsoleBearer']);
    const res = await api(null, '/docs/console');
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('/openapi/console.json');
  });

  it('documents every webhook event a receiver can get, with its headers and body', async () => {
    const doc = await json(await api(null, '/openapi.json'), 200);
    expect(Object.keys(doc.webhooks)).toEqual([...WEBHOOK_EVENTS, 'webhook.test']);
    const succeeded = doc.webhooks['proof.succeeded'].post;
    expect(succeeded.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`)).toEqual([
      'header:webhook-id',
      'header:webhook-timestamp',
      'header:webhook-signature',
    ]);
    const schema = doc.components.schemas[succeeded.requestBody.content['application/json'].schema.$ref.split('/').pop()];
    expect(schema.properties.data).toEqual({ $ref: '#/components/schemas/Proof' });
    expect(schema.properties.type).toMatchObject({ enum: ['proof.succeeded'] });
  });

  it('serves an interactive reference at /docs', async () => {
    const res = await api(null, '/docs');
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('/openapi.json');
  });
});
