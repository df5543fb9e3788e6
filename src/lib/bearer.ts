// The token of an `Authorization: Bearer <token>` header: what agents, leases and the
// console's access tokens authenticate with.
import { ApiError } from './errors.ts';

/** The bearer token of the header; 401 when there is none. */
export function bearer(header: string | undefined): string {
  const m = /^Bearer\s+(\S+)$/i.exec(header ?? '');
  if (!m) throw new ApiError(401, 'Missing bearer token');
  return m[1];
}
