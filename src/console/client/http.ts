// Calls to /console/v1. The access token lives only in this page's memory; the refresh
// token is an HttpOnly cookie this code never sees, traded for a new access token when
// the page loads and whenever a call answers 401.
import type { CSRF_HEADER } from '../../features/accounts/schemas.ts';
import type { ConsoleUser, ErrorBody, Token } from '../ui/api-types.ts';
import { links } from '../ui/site.ts';

const API = '/console/v1';
/** Cookie-authenticated calls (/auth) carry it; a cross-site form cannot. Typed by the server's own name. */
const CSRF: Record<typeof CSRF_HEADER, '1'> = { 'X-Console-CSRF': '1' };

export class ApiError extends Error {
  /** The server's reason, when it gave one (a 422's fields joined). */
  readonly detail: string | undefined;
  constructor(
    readonly status: number,
    detail?: ErrorBody['detail'],
  ) {
    const said =
      typeof detail === 'string'
        ? detail
        : Array.isArray(detail)
          ? detail.map((d) => `${d.loc.slice(1).join('.')}: ${d.msg}`).join('; ')
          : undefined;
    super(said ?? `HTTP ${status}`);
    this.detail = said;
  }
}

/** The refusal a response carries, as an error to throw. */
async function refusal(res: Response): Promise<ApiError> {
  const body = (await res.json().catch(() => ({}))) as Partial<ErrorBody>;
  return new ApiError(res.status, body.detail);
}

export const session: { token: string | null; user: ConsoleUser | null; refreshing: Promise<boolean> | null } = {
  token: null,
  user: null,
  refreshing: null,
};

/** Trades the refresh cookie for an access token; one refresh at a time (the cookie rotates). */
export function refresh(): Promise<boolean> {
  session.refreshing ??= fetch(`${API}/auth/refresh`, { method: 'POST', headers: CSRF, credentials: 'same-origin' })
    .then(async (res) => {
      if (!res.ok) return false;
      const body = (await res.json()) as Token;
      session.token = body.access_token;
      session.user = body.user;
      return true;
    })
    .finally(() => (session.refreshing = null));
  return session.refreshing;
}

/** To the sign-in page, which comes back here afterwards. */
export function toSignIn(): void {
  location.assign(`${links.signin}?next=${encodeURIComponent(location.pathname + location.search)}`);
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A /console/v1 call with the bearer token; refreshes once on 401. Throws ApiError unless 2xx. */
export async function call(path: string, method: Method = 'GET', json?: unknown, retried = false): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${session.token}` };
  if (json !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(API + path, { method, headers, body: json !== undefined ? JSON.stringify(json) : undefined });
  if (res.status === 401 && !retried) {
    if (await refresh()) return call(path, method, json, true);
    toSignIn();
    throw new ApiError(401, 'Signed out');
  }
  if (!res.ok) throw await refusal(res);
  return res;
}

/** A call whose answer is JSON of type T (the server's schema, src/console/ui/api-types.ts). */
export const callJson = async <T>(path: string, method: Method = 'GET', json?: unknown): Promise<T> =>
  (await call(path, method, json)).json() as Promise<T>;

/** The cookie-authenticated /auth calls: sign in and out, one-time links; `bearer`: as the signed-in user too (accepting an invitation). */
export async function authCall<T>(path: string, json?: unknown, bearer?: string): Promise<T> {
  const headers: Record<string, string> = { ...CSRF };
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  if (json !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${API}/auth/${path}`, { method: 'POST', headers, body: json !== undefined ? JSON.stringify(json) : undefined });
  if (!res.ok) throw await refusal(res);
  return res.json() as Promise<T>;
}

/** Ends the session of the refresh cookie, whatever the answer (the page leaves either way). */
export async function signOut(): Promise<void> {
  await fetch(`${API}/auth/signout`, { method: 'POST', headers: CSRF }).catch(() => undefined);
  session.token = null;
}
