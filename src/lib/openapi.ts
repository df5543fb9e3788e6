// The API references (OpenAPI 3.1), cut from the one document the app's routes generate:
// each audience's paths (the callers' /v1, the console's /console/v1), with the
// components they use and nothing else, and the examples a reader (and an SDK
// generator) looks for. Routes declare their own words (operationId, summary,
// description, error examples: src/lib/schemas.ts errorResponses); what every route
// shares is added here once: the 415 of a body sent as the wrong type (the door,
// src/middleware/door.ts) and, where a route gives none, its success example sampled
// from its schema's own examples (Redocly's openapi-sampler).
import { sample } from 'openapi-sampler';

/** The parts of an OpenAPI document this module reads and writes. */
export interface OpenApiDocument {
  paths?: Record<string, object>;
  webhooks?: Record<string, unknown>;
  components?: object;
  security?: object[];
  info?: object;
  servers?: object[];
}

interface MediaType {
  schema?: Parameters<typeof sample>[0];
  example?: unknown;
  examples?: unknown;
}
interface Operation {
  requestBody?: { content?: Record<string, MediaType> };
  responses?: Record<string, { description: string; content?: Record<string, MediaType> }>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

const operationsOf = (doc: OpenApiDocument): Operation[] =>
  Object.values(doc.paths ?? {}).flatMap((item) =>
    Object.entries(item as Record<string, unknown>)
      .filter(([method]) => METHODS.includes(method))
      .map(([, op]) => op as Operation),
  );

/** Every `#/components/...` a value refers to, directly. */
function refsIn(value: unknown, found: Set<string>): void {
  if (Array.isArray(value)) for (const v of value) refsIn(v, found);
  else if (value && typeof value === 'object')
    for (const [key, v] of Object.entries(value)) {
      if (key === '$ref' && typeof v === 'string' && v.startsWith('#/components/')) found.add(v);
      else refsIn(v, found);
    }
}

/**
 * The reference of the paths under `prefixes` (and the webhooks, when `webhooks`): the
 * document with the other paths left out, and then the components nothing left refers
 * to (security schemes: those its `security` names).
 */
export function referenceOf(doc: OpenApiDocument, prefixes: string[], { webhooks }: { webhooks: boolean }): OpenApiDocument {
  const paths = Object.fromEntries(Object.entries(doc.paths ?? {}).filter(([path]) => prefixes.some((p) => path.startsWith(p))));
  const out: OpenApiDocument = { ...doc, paths };
  if (!webhooks) delete out.webhooks;
  // What the kept parts refer to, followed through the components they reach.
  const { components: all, ...rest } = out;
  const components = (all ?? {}) as Record<string, Record<string, unknown> | undefined>;
  const used = new Set<string>();
  refsIn(rest, used);
  for (const sec of [rest.security, ...operationsOf(out).map((op) => (op as { security?: unknown }).security)])
    for (const req of (sec as Record<string, unknown>[] | undefined) ?? [])
      for (const name of Object.keys(req)) used.add(`#/components/securitySchemes/${name}`);
  // A Set iterated while it grows visits what is added too: the components' own refs.
  for (const ref of used) {
    const [, , kind, name] = ref.split('/');
    refsIn(components[kind]?.[name], used);
  }
  out.components = Object.fromEntries(
    Object.entries(components)
      .map(([kind, entries]) => [
        kind,
        Object.fromEntries(Object.entries(entries ?? {}).filter(([name]) => used.has(`#/components/${kind}/${name}`))),
      ])
      .filter(([, entries]) => Object.keys(entries).length > 0),
  );
  return out;
}

/** The 415 every route that takes a body answers for a body of another type (src/middleware/door.ts refuseMediaType). */
const UNSUPPORTED_MEDIA_TYPE = (types: string[]) => ({
  description: `The body was sent as a type this route does not read (it reads ${types.join(' or ')}); Accept-Post or Accept-Patch names them`,
  content: {
    'application/json': {
      schema: { $ref: '#/components/schemas/ErrorResponse' },
      example: {
        detail: `Unsupported Content-Type "text/plain": send this body as ${types.join(' or ')} (with curl: ${types.includes('application/json') ? `-H 'Content-Type: application/json'` : '-F name=@file'})`,
      },
    },
  },
});

/**
 * The document with what every route shares: a 415 on each that takes a body, and an
 * example on each JSON response that gives none, sampled from its schema (its fields'
 * own examples, formats and enums) against the document's components.
 */
export function withSharedResponses(doc: OpenApiDocument): OpenApiDocument {
  for (const op of operationsOf(doc)) {
    const bodyTypes = Object.keys(op.requestBody?.content ?? {});
    if (bodyTypes.length > 0 && op.responses && !op.responses['415']) op.responses['415'] = UNSUPPORTED_MEDIA_TYPE(bodyTypes);
    for (const response of Object.values(op.responses ?? {}))
      for (const [type, media] of Object.entries(response.content ?? {}))
        if (type === 'application/json' && media.schema && media.example === undefined && media.examples === undefined)
          media.example = sample(media.schema, { skipWriteOnly: true, quiet: true }, doc);
  }
  return doc;
}
