// The API references (src/app.ts REFERENCES, src/lib/openapi.ts) as the Worker serves
// them, linted by Redocly's CLI under redocly.yaml (built-in rules, no network, no
// telemetry) with no error and no warning, and checked for what the lint cannot say:
// every operation has a unique camelCase operationId, a summary and a description, and
// every JSON answer (success and error) an example. The documents are kept in
// test-artifacts/openapi/ for a reader.
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/** What this test reads of src/app.ts. */
interface Reference {
  paths?: Record<string, object>;
  webhooks?: Record<string, object>;
  components?: { securitySchemes?: Record<string, object> };
  info?: { title?: string };
}
// The app is imported by its path, not by name: its modules type-check under the
// Worker's tsconfig (src/tsconfig.json, workers types and JSX), not this Node project's.
const APP = new URL('../../src/app.ts', import.meta.url).href;
const { referenceDocument, REFERENCES } = (await import(APP)) as {
  REFERENCES: Record<string, unknown>;
  referenceDocument: (name: string, origin: string) => Reference;
};

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const OUT = path.join(ROOT, 'test-artifacts', 'openapi');
/** A server origin the lint takes for a real one (not localhost nor example.com). */
const ORIGIN = 'https://proving.invalid';

const names = Object.keys(REFERENCES);
const documents = Object.fromEntries(names.map((n) => [n, referenceDocument(n, ORIGIN)]));

interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  responses: Record<string, { content?: Record<string, { example?: unknown; examples?: unknown }> }>;
}
const operations = (doc: (typeof documents)[string]) => [
  ...Object.entries(doc.paths ?? {}).flatMap(([p, item]) =>
    Object.entries(item as Record<string, Operation>).map(([method, op]) => ({ at: `${method.toUpperCase()} ${p}`, op })),
  ),
  ...Object.entries(doc.webhooks ?? {}).flatMap(([event, item]) =>
    Object.entries(item as Record<string, Operation>).map(([, op]) => ({ at: `webhook ${event}`, op })),
  ),
];

describe('the API references', () => {
  it('are two: the callers’ (/v1, with the webhooks) and the console’s (/console/v1)', () => {
    const paths = (n: string) => Object.keys(documents[n].paths ?? {});
    expect(paths('callers').length).toBeGreaterThan(30);
    expect(paths('callers').every((p) => p.startsWith('/v1/') || p.startsWith('/downloads/'))).toBe(true);
    expect(Object.keys(documents.callers.webhooks ?? {})).toContain('proof.succeeded');
    expect(paths('console').length).toBeGreaterThan(40);
    expect(paths('console').every((p) => p.startsWith('/console/v1/'))).toBe(true);
    expect(documents.console.webhooks).toBeUndefined();
  });

  it('name every operation (a unique camelCase operationId), sum it up, describe it, and give an example of each JSON answer', () => {
    const all = names.flatMap((n) => operations(documents[n]));
    const missing = all.flatMap(({ at, op }) => [
      ...(op.operationId && /^[a-z][A-Za-z0-9]*$/.test(op.operationId) ? [] : [`${at}: operationId ${op.operationId}`]),
      ...(op.summary ? [] : [`${at}: summary`]),
      ...(op.description ? [] : [`${at}: description`]),
      ...Object.entries(op.responses ?? {}).flatMap(([status, r]) =>
        Object.entries(r.content ?? {})
          .filter(([type, m]) => type === 'application/json' && m.example === undefined && m.examples === undefined)
          .map(() => `${at}: example of ${status}`),
      ),
    ]);
    expect(missing).toEqual([]);
    const ids = all.map(({ op }) => op.operationId);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
  });

  const cli = path.join(ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
  for (const name of names)
    it(`pass redocly lint with no error and no warning: the ${name} reference`, async () => {
      mkdirSync(OUT, { recursive: true });
      const file = path.join(OUT, `${name}.json`);
      writeFileSync(file, JSON.stringify(documents[name], null, 2));
      const run = await promisify(execFile)(
        process.execPath,
        [cli, 'lint', '--config', path.join(ROOT, 'redocly.yaml'), '--format', 'json', '--max-problems', '1000', file],
        { cwd: ROOT, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }, maxBuffer: 64 << 20 },
      ).catch((err: { stdout?: string; stderr?: string }) => err);
      const report = JSON.parse(run.stdout ?? '{}') as {
        totals?: { errors: number; warnings: number };
        problems?: { ruleId: string; message: string; location: { pointer?: string }[] }[];
      };
      const problems = (report.problems ?? []).map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
      expect(problems, run.stderr).toEqual([]);
      expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 });
    });
});
