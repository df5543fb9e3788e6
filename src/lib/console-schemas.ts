// Schemas shared by the /console/v1 route modules: its security scheme, error
// responses and common parameters. Errors have the public API's shapes (src/lib/errors.ts).
import { z } from '@hono/zod-openapi';
import { ROLES } from '../db/schema.ts';
import { ErrorResponse, ValidationErrorResponse } from './schemas.ts';

/** The OpenAPI security scheme of /console/v1 (registered in src/app.ts). */
export const CONSOLE_SECURITY = [{ ConsoleBearer: [] }];

/** The header the console's client sends on cookie-authenticated calls (/auth); a cross-site form cannot. */
export const CSRF_HEADER = 'X-Console-CSRF';

const ERROR_TEXT = {
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

export const consoleErrors = (...statuses: (keyof typeof ERROR_TEXT)[]) =>
  Object.fromEntries(
    [...new Set([401, ...statuses])].map((s) => [
      s,
      { description: ERROR_TEXT[s as keyof typeof ERROR_TEXT], content: { 'application/json': { schema: s === 422 ? ValidationErrorResponse : ErrorResponse } } },
    ]),
  ) as Record<number, { description: string; content: Record<string, { schema: z.ZodTypeAny }> }>;

export const OrgParams = z.object({ org_id: z.string().min(1).max(64).openapi({ param: { name: 'org_id', in: 'path' }, example: 'org_01jd…' }) });

export const RoleSchema = z.enum(ROLES).openapi({ description: 'owner: everything, including owners; admin: members, invitations, webhooks and every key; member: projects, proofs and their own keys; viewer: reads only (README "Roles")' });

export const Email = z
  .string()
  .trim()
  .toLowerCase()
  .max(254)
  .regex(/^[^\s@]+@[^\s@]+$/, 'Value error, not an email address');

/** An ISO date (YYYY-MM-DD) or date-time, for date-range filters. */
export const DateParam = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}(T[\d:.]+Z?)?$/, 'Value error, expected a date YYYY-MM-DD or an ISO date-time')
  .openapi({ example: '2026-11-01' });

/** Inclusive date range bounds as stored timestamps compare: `to` as a date covers that whole day. */
export function dateRange(from?: string, to?: string): { from?: string; to?: string } {
  return { from, to: to && to.length === 10 ? `${to}T23:59:59.999Z` : to };
}
