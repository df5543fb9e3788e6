// Error responses in the reference service's style (a FastAPI service):
//   4xx/5xx: {"detail": "message"}
//   422:     {"detail": [{"loc": [...], "msg": "...", "type": "..."}]}
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { z } from 'zod';

export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** A request we refuse with a status and a plain message. Thrown from anywhere in a handler. */
export class ApiError extends Error {
  readonly status: ContentfulStatusCode;
  readonly headers: Record<string, string> | undefined;
  constructor(status: ContentfulStatusCode, message: string, headers?: Record<string, string>) {
    super(message);
    this.status = status;
    this.headers = headers;
  }
}

/**
 * Most issues one 422 lists. Past it the list ends with one `too_many_errors` item
 * counting the rest, so the error body stays small whatever the input (a 12 MB input
 * of 6 million bad entries once built a 2.4 GB error list).
 */
export const MAX_LISTED_ISSUES = 100;

/**
 * Collects issues up to MAX_LISTED_ISSUES and only counts the rest, so a validator
 * walking millions of bad entries never holds more than the listed ones.
 */
export class IssueList {
  readonly listed: ValidationIssue[] = [];
  omitted = 0;
  add(issue: ValidationIssue | (() => ValidationIssue)) {
    if (this.listed.length < MAX_LISTED_ISSUES) this.listed.push(typeof issue === 'function' ? issue() : issue);
    else this.omitted++;
  }
  static of(issues: ValidationIssue[]): IssueList {
    const list = new IssueList();
    for (const issue of issues) list.add(issue);
    return list;
  }
  get size() {
    return this.listed.length + this.omitted;
  }
  /** The 422 detail: the listed issues, then how many more there were. */
  detail(): ValidationIssue[] {
    if (this.omitted === 0) return this.listed;
    const root = this.listed[0]?.loc[0] ?? 'body';
    return [
      ...this.listed,
      {
        loc: [root],
        msg: `${this.omitted} more error${this.omitted === 1 ? '' : 's'} omitted: only the first ${MAX_LISTED_ISSUES} are listed`,
        type: 'too_many_errors',
      },
    ];
  }
}

/** A 422 with one or more validation issues (at most MAX_LISTED_ISSUES of them listed). */
export class ValidationError extends Error {
  readonly issues: ValidationIssue[];
  constructor(issues: ValidationIssue[] | IssueList) {
    const detail = (issues instanceof IssueList ? issues : IssueList.of(issues)).detail();
    super(detail.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; '));
    this.issues = detail;
  }
}

export const notFound = (what: string) => new ApiError(404, `${what} not found`);

/**
 * The 404 of a file of a deleted record (docs/callers.md "Deleting records"): the
 * file no longer exists, as before it was made; the record's GET says when it went.
 */
export function refuseDeleted(record: { deleted_at: string | null }, what: string): void {
  if (record.deleted_at) throw new ApiError(404, `${what} was deleted at ${record.deleted_at}: its files are gone`);
}

/** The 400 of a path with a malformed percent escape (`%E0%A4%A`): the request's fault, never a 500. */
export const malformedPath = () => new ApiError(400, 'Malformed percent-encoding in the request path');

/** A percent-encoded path segment, decoded; 400 when its escapes are malformed. */
export function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw malformedPath();
  }
}

/**
 * Whether a batch failed because an insert into `table` got a NULL org_id: how a write
 * whose organization comes from a check inside the batch (a live key, a quota) is
 * refused as a whole, nothing of it stored.
 */
export function isRefusedInsert(err: unknown, table: string): boolean {
  return failedWith(err, `NOT NULL constraint failed: ${table}.org_id`);
}

/** Whether a statement failed with `text` in its message (a constraint, a trigger's RAISE), through drizzle's wrapping. */
export function failedWith(err: unknown, text: string): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) if (e.message.includes(text)) return true;
  return false;
}

/**
 * For `.catch()` on a write the database itself refuses (a constraint, a trigger): a
 * failure whose message has `text` becomes an ApiError(status, message); any other is
 * rethrown. How an invariant enforced where the data is reaches the caller as a clear error.
 */
export const refusedAs =
  (text: string, status: ContentfulStatusCode, message: string) =>
  (err: unknown): never => {
    if (failedWith(err, text)) throw new ApiError(status, message);
    throw err;
  };

/** Where a validator looked, as FastAPI names it in `loc`. */
const LOC_ROOT: Record<string, string> = {
  query: 'query',
  param: 'path',
  json: 'body',
  form: 'body',
  header: 'header',
  cookie: 'cookie',
};

/** Maps zod issues onto FastAPI/pydantic error types and messages. */
export function zodIssuesToValidation(error: z.core.$ZodError, target: string, input?: unknown): ValidationIssue[] {
  const root = LOC_ROOT[target] ?? target;
  const list = new IssueList();
  for (const issue of error.issues) list.add(() => describeZodIssue(issue, root, input));
  return list.detail();
}

function describeZodIssue(issue: z.core.$ZodIssue, root: string, input: unknown): ValidationIssue {
  const loc = [root, ...issue.path.map((p) => (typeof p === 'number' ? p : String(p)))];
  // zod does not report the offending value by default; look it up to tell
  // "missing" from "present but wrong".
  const value = issue.path.reduce<unknown>(
    (v, key) => (v && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[key] : undefined),
    input,
  );
  const { msg, type } = describeIssue(issue, value);
  return { loc, msg, type };
}

function describeIssue(issue: z.core.$ZodIssue, value: unknown): { msg: string; type: string } {
  const params = (issue as { params?: { type?: string; msg?: string } }).params;
  if (params?.type) return { type: params.type, msg: params.msg ?? issue.message };
  switch (issue.code) {
    case 'invalid_type': {
      if (value === undefined) return { type: 'missing', msg: 'Field required' };
      if (issue.expected === 'number' || issue.expected === 'int' || issue.expected === 'bigint')
        return { type: 'int_parsing', msg: 'Input should be a valid integer, unable to parse string as an integer' };
      if (issue.expected === 'string') return { type: 'string_type', msg: 'Input should be a valid string' };
      if (issue.expected === 'array') return { type: 'list_type', msg: 'Input should be a valid list' };
      if (issue.expected === 'object') return { type: 'dict_type', msg: 'Input should be a valid dictionary' };
      if (issue.expected === 'boolean') return { type: 'bool_type', msg: 'Input should be a valid boolean' };
      return { type: `${issue.expected}_type`, msg: issue.message };
    }
    case 'too_small':
      if (issue.origin === 'number' || issue.origin === 'int')
        return issue.inclusive === false
          ? { type: 'greater_than', msg: `Input should be greater than ${issue.minimum}` }
          : { type: 'greater_than_equal', msg: `Input should be greater than or equal to ${issue.minimum}` };
      if (issue.origin === 'string') return { type: 'string_too_short', msg: `String should have at least ${issue.minimum} characters` };
      return { type: 'too_short', msg: `Should have at least ${issue.minimum} items` };
    case 'too_big':
      if (issue.origin === 'number' || issue.origin === 'int')
        return issue.inclusive === false
          ? { type: 'less_than', msg: `Input should be less than ${issue.maximum}` }
          : { type: 'less_than_equal', msg: `Input should be less than or equal to ${issue.maximum}` };
      if (issue.origin === 'string') return { type: 'string_too_long', msg: `String should have at most ${issue.maximum} characters` };
      return { type: 'too_long', msg: `Should have at most ${issue.maximum} items` };
    case 'invalid_value':
      return {
        type: 'literal_error',
        msg: `Input should be ${issue.values
          .map((v) => `'${String(v)}'`)
          .join(' or ')
          .replace(/ or (?=.* or )/g, ', ')}`,
      };
    case 'invalid_format':
      if (issue.format === 'uuid') return { type: 'uuid_parsing', msg: 'Input should be a valid UUID' };
      return { type: 'string_pattern_mismatch', msg: issue.message };
    case 'unrecognized_keys':
      return { type: 'extra_forbidden', msg: 'Extra inputs are not permitted' };
    default:
      return { type: 'value_error', msg: `Value error, ${issue.message}` };
  }
}

/**
 * A request refused for its own shape (400, 413, 415, 422) before its credentials were
 * checked is answered 401 if those are no good: as in the reference, authentication
 * comes first. Credentials are otherwise checked inside the request's first D1 read
 * (src/middleware/auth.ts), which a request refused this early never makes.
 */
async function credentialsFirst(c: Context): Promise<void> {
  const gate = c.get('authGate') as (() => Promise<void>) | undefined;
  if (gate && !c.get('caller')) await gate();
}

/** The hook every validator uses: 422 in FastAPI's shape on failure. */
export async function validationHook(
  result: { success: true; target: string } | { success: false; error: z.core.$ZodError; target: string; data?: unknown },
  c: Context,
) {
  if (!result.success) {
    await credentialsFirst(c);
    return c.json({ detail: zodIssuesToValidation(result.error, result.target, result.data) }, 422);
  }
}

/** App-wide error handler: every thrown error becomes a JSON body; nothing leaks a stack trace. */
export async function onError(err: Error, c: Context): Promise<Response> {
  // A body refused with its credentials (keyBeforeBody): that refusal, whatever its reader made of the failed read.
  const refusal = c.get('bodyRefusal') as Error | undefined;
  if (refusal && refusal !== err) return onError(refusal, c);
  // A malformed percent escape (decodeURIComponent's URIError, wherever it was decoded) is the request's fault.
  if (err instanceof URIError) return onError(malformedPath(), c);
  if ((err instanceof ValidationError || (err instanceof ApiError && [400, 413, 415].includes(err.status))) && !c.get('caller')) {
    try {
      await credentialsFirst(c);
    } catch (gateErr) {
      if (gateErr instanceof ApiError) return c.json({ detail: gateErr.message }, gateErr.status, gateErr.headers);
      throw gateErr;
    }
  }
  if (err instanceof ApiError) return c.json({ detail: err.message }, err.status, err.headers);
  if (err instanceof ValidationError) return c.json({ detail: err.issues }, 422);
  if (err instanceof HTTPException) {
    // Hono's JSON validator rejects unparsable bodies with a 400; FastAPI says 422 json_invalid.
    if (err.status === 400 && /malformed json/i.test(err.message))
      return c.json({ detail: [{ loc: ['body', 0], msg: 'JSON decode error', type: 'json_invalid' }] }, 422);
    return c.json({ detail: err.message || 'Request failed' }, err.status);
  }
  console.error(JSON.stringify({ level: 'error', msg: 'unhandled error', path: c.req.path, error: String(err), stack: err.stack }));
  return c.json({ detail: 'Internal Server Error' }, 500);
}
