// Request and response schemas shared by the route modules. Requests are validated
// with these and the OpenAPI document is generated from the same objects.
import { z } from '@hono/zod-openapi';

/** An integer query parameter, FastAPI-style errors (`int_parsing`, `greater_than_equal`, ...). */
const boundedInt = (min: number, max: number | undefined) => {
  const s = z.coerce.number().int().min(min);
  return max === undefined ? s : s.max(max);
};
export const queryInt = (min: number, max: number | undefined, fallback: number, description: string) =>
  boundedInt(min, max).default(fallback).openapi({ type: 'integer', minimum: min, maximum: max, default: fallback, description });
export const optionalQueryInt = (min: number, max: number | undefined, description: string) =>
  boundedInt(min, max).optional().openapi({ type: 'integer', minimum: min, maximum: max, description });

export const PaginationQuery = z.object({
  page: queryInt(1, undefined, 1, 'Page number, from 1'),
  page_size: queryInt(1, 100, 20, 'Items per page, 1 to 100'),
});

export const Uuid = (name: string) =>
  z.uuid().openapi({ param: { name, in: 'path' }, example: '0199a3c2-5b1e-7c4e-9d2a-3f6b8e1c0a11' });

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

export const IdResponse = z.object({ id: z.string() }).openapi('IdResponse');
export const MessageResponse = z.object({ message: z.string() }).openapi('MessageResponse');

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

/** Standard error responses, for route definitions. */
export const errorResponses = (...statuses: (400 | 401 | 404 | 409 | 413 | 422)[]) => {
  const out: Record<number, { description: string; content: Record<string, { schema: z.ZodTypeAny }> }> = {};
  const text: Record<number, string> = {
    400: 'Invalid files or parameters',
    401: 'Missing, unknown or revoked API key',
    404: 'Not found (or not visible to this organization)',
    409: 'Conflict with the record’s current state',
    413: 'Upload too large',
    422: 'Validation error',
  };
  for (const s of [401, ...statuses]) {
    out[s] = {
      description: text[s],
      content: { 'application/json': { schema: s === 422 ? ValidationErrorResponse : ErrorResponse } },
    };
  }
  return out;
};
