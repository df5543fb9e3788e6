import { describe, expect, it } from 'vitest';
import { app } from '../../src/app.ts';
import { api, json } from './helpers.ts';
import { WEBHOOK_EVENTS } from '../../src/db/schema.ts';

/** Hono route path → OpenAPI path (`:id` → `{id}`). */
const toOpenApi = (path: string) => path.replace(/:([A-Za-z_]+)/g, '{$1}');

describe('OpenAPI document', () => {
  it('covers every /v1 route the app serves, with the interface version', async () => {
    const doc = await json(await api(null, '/openapi.json'), 200);
    expect(doc.info.version).toBe('2.0.0');
    const documented = new Set<string>();
    for (const [path, ops] of Object.entries<Record<string, unknown>>(doc.paths))
      for (const method of Object.keys(ops)) documented.add(`${method.toUpperCase()} ${path}`);
    const served = app.routes
      .filter((r) => r.path.startsWith('/v1/') && r.method !== 'ALL')
      .map((r) => `${r.method} ${toOpenApi(r.path).replace(/\/$/, '')}`);
    expect(served.length).toBeGreaterThan(20);
    const missing = served.filter((r) => !documented.has(r));
    expect(missing).toEqual([]);
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
