// Request and response schemas shared by the route modules. Requests are validated
// with these and the OpenAPI document is generated from the same objects.
import { z } from '@hono/zod-openapi';
import type { ValidationIssue } from './errors.ts';
import { codePointName, UNSAFE_NAME_CHARACTER } from './limits.ts';

/** What Rust's `str::trim` strips (Unicode White_Space); not JavaScript's `trim` (which also strips U+FEFF but not U+0085). */
const RUST_TRIM =
  /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g;
/** A JSON integer (what pydantic-core's number parser, jiter's NumberInt, accepts). */
const JSON_INT = /^-?(?:0|[1-9][0-9]*)$/;

/**
 * A query-string integer exactly as pydantic v2 parses a str in lax mode (FastAPI
 * query parameters), or null where pydantic answers `int_parsing`. After
 * pydantic-core src/input/shared.rs (`str_as_int`, `clean_int_str`,
 * `strip_leading_zeros`, `strip_underscores`): a JSON integer is taken as is;
 * otherwise, once, surrounding whitespace is trimmed, one leading `+` dropped (not
 * `+-`), leading zeros dropped (`007`, `0_7`), a decimal part of only zeros dropped
 * (`5.0`, `5.00`; not `5.`), and single inner underscores removed (`1_000`; not
 * `_1`, `1_`, `1__0`), and what is left must be a JSON integer. So `+5`, ` 5 `,
 * `5.0`, `1_000` are 5/5/5/1000, while `0x10`, `1e3`, `5.5`, `5.`, `--5`, `` are refused.
 */
export function parseQueryInt(text: string): bigint | null {
  if (JSON_INT.test(text)) return BigInt(text);
  let s = text.replace(RUST_TRIM, '');
  if (s.startsWith('+')) {
    if (s[1] === '-') return null;
    s = s.slice(1);
  }
  let sign = '';
  if (s.startsWith('-')) {
    if (s[1] === '-' || s[1] === '+') return null;
    sign = '-';
    s = s.slice(1);
  }
  const digits = stripLeadingZeros(s);
  if (digits === null) return null;
  s = digits;
  const dot = s.indexOf('.');
  if (dot >= 0 && /^0+$/.test(s.slice(dot + 1))) s = s.slice(0, dot);
  if (s.includes('_') && !s.startsWith('_') && !s.endsWith('_') && !s.includes('__')) s = s.replaceAll('_', '');
  return JSON_INT.test(sign + s) ? BigInt(sign + s) : null;
}

/** pydantic-core's `strip_leading_zeros`: keeps one zero (`000` → `0`, `00.0` → `0.0`); null if it does not start like a number. */
function stripLeadingZeros(s: string): string | null {
  if (s.length === 0) return null;
  if (s[0] !== '0') return /[1-9-]/.test(s[0]) ? s : null;
  for (let i = 1; i < s.length; i++) {
    const c = s[i];
    if (c === '0' || c === '_') continue;
    if (/[1-9-]/.test(c)) return s.slice(i);
    if (c === '.') return s.slice(i - 1);
    return null;
  }
  return s.slice(-1);
}

/**
 * An integer query parameter, FastAPI-style errors (`int_parsing`, `greater_than_equal`, ...).
 * A string pydantic would refuse is passed on unparsed, so zod reports it as not a
 * number (mapped to `int_parsing`); integers past 2^53 fail zod's safe-integer bound.
 */
const boundedInt = (min: number, max: number | undefined) => {
  const n = z.number().int().min(min);
  return z.preprocess(
    (v) => {
      if (typeof v !== 'string') return v;
      const parsed = parseQueryInt(v);
      return parsed === null ? v : Number(parsed);
    },
    max === undefined ? n : n.max(max),
  );
};
export const queryInt = (min: number, max: number | undefined, fallback: number, description: string) =>
  boundedInt(min, max).default(fallback).openapi({ type: 'integer', minimum: min, maximum: max, default: fallback, description });
export const optionalQueryInt = (min: number, max: number | undefined, description: string) =>
  boundedInt(min, max).optional().openapi({ type: 'integer', minimum: min, maximum: max, description });

export const PaginationQuery = z.object({
  page: queryInt(1, undefined, 1, 'Page number, from 1'),
  page_size: queryInt(1, 100, 20, 'Items per page, 1 to 100'),
});

export const Uuid = (name: string) => z.uuid().openapi({ param: { name, in: 'path' }, example: '0199a3c2-5b1e-7c4e-9d2a-3f6b8e1c0a11' });

/**
 * A config id, `cfg_{ulid}`. ULIDs are Crockford base32, which is case-insensitive:
 * the reference service's ids are lowercase (`cfg_01k3w1spnpnxzry017g5jzcy97`, the
 * published client's default) and ours are stored uppercase, so ids are normalized
 * to the stored form before any lookup.
 */
export const ConfigId = z
  .string()
  .regex(/^cfg_[0-9A-HJKMNP-TV-Z]{26}$/i, 'config id must look like cfg_{ulid}')
  .transform(normalizeConfigId)
  .openapi({ type: 'string', example: 'cfg_01JD0000000000000000000000' });

/** `cfg_` + the ULID in upper case (its canonical spelling). */
export function normalizeConfigId(id: string): string {
  return 'cfg_' + id.slice(4).toUpperCase();
}

/** A time as records carry it: ISO 8601 in UTC. */
export const Timestamp = z.string().openapi({ format: 'date-time', example: '2026-11-21T10:00:00.000Z' });

export const IdResponse = z
  .object({ id: z.string().openapi({ description: 'The new record’s id (a UUID)', example: '0b7e2c1a-5d4f-4c8e-9a61-3f2d7b9e8c10' }) })
  .openapi('IdResponse');
export const MessageResponse = z.object({ message: z.string().openapi({ example: 'OK' }) }).openapi('MessageResponse');

export const ErrorResponse = z
  .object({ detail: z.string() })
  .openapi('ErrorResponse', { description: 'A refused request, with a human-readable reason.' });

export const ValidationErrorResponse = z
  .object({
    detail: z.array(
      z.object({
        loc: z.array(z.union([z.string(), z.number()])),
        msg: z.string(),
        type: z.string(),
      }),
    ),
  })
  .openapi('HTTPValidationError');

export const Pagination = z
  .object({ total: z.number().int(), page: z.number().int(), page_size: z.number().int(), pages: z.number().int() })
  .openapi('Pagination');

export const pageOf = <T extends z.ZodTypeAny>(item: T, name: string) =>
  z.object({ items: z.array(item), pagination: Pagination }).openapi(name);

export function paginate<T>(items: T[], total: number, page: number, pageSize: number) {
  return { items, pagination: { total, page, page_size: pageSize, pages: Math.ceil(total / pageSize) } };
}

/** A 422's example: one issue, where it is, what is wrong and its type (pydantic's). */
const VALIDATION_EXAMPLE = { detail: [{ loc: ['query', 'program_id'], msg: 'Input should be a valid UUID', type: 'uuid_parsing' }] };

/** What a refusal of each status reads like (examples in the references; the words are the service's own). */
const ERROR_EXAMPLES: Record<number, string> = {
  400: 'Expected a multipart/form-data body with file parts "elf" and "vmexe"',
  401: 'Invalid API key: no key has this secret (check that it was copied whole)',
  403: "This API key may not register programs, submit proofs and executions, verify proofs: that needs a member's rights or more, and its scope is read (reads only): a key of scope full or prove may",
  404: 'Program not found',
  409: 'Program 0b7e2c1a-5d4f-4c8e-9a61-3f2d7b9e8c10 is not ready to prove (status: processing)',
  413: 'Request body too large: the limit is 1048576 bytes',
  429: 'Rate limit exceeded: this API key has used its "reads" limit, reads (GET requests)',
};

/** An error response's content: its schema, and an example of `status`. */
const errorContent = (status: number, example: string) => ({
  'application/json':
    status === 422
      ? { schema: ValidationErrorResponse, example: VALIDATION_EXAMPLE }
      : { schema: ErrorResponse, example: { detail: example } },
});

/** Standard error responses, for route definitions. */
export const errorResponses = (...statuses: (400 | 401 | 404 | 409 | 413 | 422)[]) => {
  const out: Record<number, { description: string; content: Record<string, { schema: z.ZodTypeAny; example: unknown }> }> = {};
  const text: Record<number, string> = {
    400: 'Invalid files or parameters',
    401: 'Missing, unknown or revoked API key',
    403: 'The API key’s scope, or its creator’s current role, does not allow this (docs/callers.md "API keys and scopes")',
    404: 'Not found (or not visible to this organization)',
    409: 'Conflict with the record’s current state',
    413: 'Upload too large',
    422: 'Validation error',
    429: 'Rate limit of the API key exceeded for this endpoint class (see Retry-After)',
  };
  // Every /v1 route declares an action at its door (src/middleware/door.ts): any key may be refused it.
  for (const s of [401, 403, ...statuses, 429]) {
    out[s] = { description: text[s], content: errorContent(s, ERROR_EXAMPLES[s]) };
  }
  return out;
};

// ---------------------------------------------------------------------------
// Idempotent submissions (src/middleware/idempotency/, docs/callers.md "Idempotent submissions").

/** The request header of every route that creates something. */
export const IdempotencyHeaders = z.object({
  'Idempotency-Key': z.string().min(1).max(255).optional().openapi({
    description:
      'Makes the request safe to retry (IETF httpapi Idempotency-Key draft): 1-255 printable ASCII characters, bare or as a quoted string, unique per operation within your organization. The same key with the same request within 24 hours answers the first answer again (same status and body, header `Idempotent-Replayed: true`) and creates nothing; with a different request (method, path, query or body) 422; while the first request is still running 409. 5xx, 401, 409, 413 and 429 answers, and refusals given before the whole body was read, are not kept: the key is free to retry. A malformed key is 400.',
    example: '9f1c2a4e-5b7d-4e0a-8c3f-2d6b1e9a7c50',
  }),
});

/** The response header of a replayed answer. */
export const ReplayedHeader = {
  'Idempotent-Replayed': {
    description:
      '`true` when this is the stored answer of an earlier request with the same Idempotency-Key (nothing was created by this one)',
    schema: { type: 'string' as const, enum: ['true'] },
  },
};

/**
 * The responses of a creating route with an Idempotency-Key: the success (with the
 * replay header), its other refusals, and the key's own 400, 409 and 422.
 */
export function idempotentResponses(success: 200 | 201, description: string, ...statuses: (400 | 404 | 409 | 413 | 422)[]) {
  const errors = errorResponses(...new Set([400, 409, 422, ...statuses] as const));
  errors[400].description += '; a malformed Idempotency-Key';
  errors[409].description += '; a request with the same Idempotency-Key is still being processed';
  errors[422].description += '; the Idempotency-Key was used for a different request';
  return {
    [success]: { description, headers: ReplayedHeader, content: { 'application/json': { schema: IdResponse } } },
    ...errors,
  } as Record<
    200 | 201,
    { description: string; headers: typeof ReplayedHeader; content: { 'application/json': { schema: typeof IdResponse } } }
  > &
    ReturnType<typeof errorResponses>;
}

// ---------------------------------------------------------------------------
// The console's API (/console/v1): its security scheme, error responses and the
// parameters every one of its resources takes. Errors have the public API's shapes.

/** The OpenAPI security scheme of /console/v1 (registered in src/app.ts). */
export const CONSOLE_SECURITY = [{ ConsoleBearer: [] }];

/** What a console refusal of each status reads like. */
const CONSOLE_ERROR_EXAMPLES: Record<number, string> = {
  ...ERROR_EXAMPLES,
  400: 'Malformed Content-Length',
  401: 'Invalid or expired access token',
  403: 'Your role (member) in Acme does not allow this: create, change, rotate, test, redeliver and delete webhook endpoints needs admin or higher',
  409: 'Proof 0b7e2c1a-5d4f-4c8e-9a61-3f2d7b9e8c10 already finished (state: Succeeded); there is nothing to cancel',
  429: 'Rate limit exceeded: this console session has used its request limit',
  502: 'The invitation could not be emailed (the mail API answered 500); nothing is pending: try again',
  503: 'Invitations are emailed and the mail sender is misconfigured: MAIL_SENDER is not set',
};

const CONSOLE_ERROR_TEXT = {
  400: 'Invalid request',
  401: 'Missing, invalid or expired access token, or an ended session',
  403: 'The caller’s role does not allow this',
  404: 'Not found (or not visible to this user)',
  409: 'Conflict with the current state',
  422: 'Validation error',
  429: 'Too many attempts: retry after Retry-After seconds',
  502: 'An upstream service (the mail API) refused or failed',
  503: 'Not configured on this deployment',
} as const;

/** Error responses of a /console/v1 route (401 always), for route definitions. */
export const consoleErrors = (...statuses: (keyof typeof CONSOLE_ERROR_TEXT)[]) =>
  Object.fromEntries(
    [...new Set([401, ...statuses] as const)].map((s) => [
      s,
      { description: CONSOLE_ERROR_TEXT[s], content: errorContent(s, CONSOLE_ERROR_EXAMPLES[s]) },
    ]),
  ) as Record<number, { description: string; content: Record<string, { schema: z.ZodTypeAny; example: unknown }> }>;

export const OrgParams = z.object({
  org_id: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'org_id', in: 'path' }, example: 'org_01jd…' }),
});

/** An ISO date (YYYY-MM-DD) or date-time, for date-range filters. */
export const DateParam = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}(T[\d:.]+Z?)?$/, 'Value error, expected a date YYYY-MM-DD or an ISO date-time')
  .openapi({ example: '2026-11-01' });

/** Inclusive date range bounds as stored timestamps compare: `to` as a date covers that whole day. */
export function dateRange(from?: string, to?: string): { from?: string; to?: string } {
  return { from, to: to && to.length === 10 ? `${to}T23:59:59.999Z` : to };
}

// ---------------------------------------------------------------------------
// Names people read

/** The first character of `text` a stored name may not hold (UNSAFE_NAME_CHARACTER), as `U+XXXX`, or null. */
export function unsafeNameCharacter(text: string): string | null {
  const found = UNSAFE_NAME_CHARACTER.exec(text)?.[0];
  return found === undefined ? null : codePointName(found);
}

const unsafeNameMessage = (found: string) =>
  `a name may not contain control or bidirectional formatting characters (found ${found}): it must read as what it is`;

/**
 * The one check of every stored name, on /v1 and the console alike: 422 (`value_error`)
 * for a control or bidirectional formatting character. Names the published client sends
 * (`program_name`, `project_name`) are what its user typed; it shows the 422's message.
 */
export const safeName = <T extends z.ZodType<string>>(schema: T) =>
  schema.superRefine((value, ctx) => {
    const found = unsafeNameCharacter(value);
    if (found) ctx.addIssue({ code: 'custom', message: unsafeNameMessage(found) });
  });

/** The same check, for a name read outside a schema (a bare JSON string, a form field): its 422 issue at `loc`, or null. */
export function unsafeNameIssue(loc: (string | number)[], text: string): ValidationIssue | null {
  const found = unsafeNameCharacter(text);
  return found ? { loc, msg: `Value error, ${unsafeNameMessage(found)}`, type: 'value_error' } : null;
}
