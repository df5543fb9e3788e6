// D1 sessions of one request (the Sessions API: read replicas with sequential
// consistency). docs/callers.md "Replicas and bookmarks" says what a caller gets:
//
// - A caller's request starts one session: from the bookmark the caller sent back in
//   the `x-d1-bookmark` header (its reads are then at least as fresh as what that
//   bookmark saw, its own writes included), or else `first-unconstrained` (the nearest
//   replica), for the public and console APIs.
// - The fleet's requests use no session: the binding itself, on which every query goes
//   to the primary ("otherwise all queries will continue to be executed only by the
//   primary database", https://developers.cloudflare.com/d1/best-practices/read-replication/).
//   An agent wants the primary's answer anyway, and a session's bookkeeping costs each
//   call CPU (locally ~0.15-0.2 ms, test/bench/BENCH-API.md "The platform's share").
// - Writes always go to the primary, and a session reads its own writes.
// - A refusal read from a replica (an unknown key, a missing record) may only mean the
//   replica is behind: such reads are repeated on the primary before the caller is
//   told no (RequestSessions.primary()).
// - Every response carries the session's latest bookmark in `x-d1-bookmark`.
import { openDb, type Db } from './client.ts';

export const BOOKMARK_HEADER = 'x-d1-bookmark';

/**
 * A D1 bookmark: four groups of hex digits (8-8-8-32). Bookmarks sort
 * lexicographically oldest to newest (D1 glossary), so the later of two is the max.
 */
const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

/** A caller's request: the nearest replica first. The fleet's: the primary, by the binding itself. */
export type SessionStart = 'first-unconstrained' | 'primary';

/** Whether a header's value (trimmed, lower case) is a D1 bookmark. */
export const isBookmark = (value: string): boolean => BOOKMARK.test(value);

export class RequestSessions {
  /** The request's session: replicas where it may, the primary for writes (the fleet's: the primary). */
  readonly db: Db;
  readonly fromBookmark: boolean;
  private readonly d1: D1Database;
  private readonly session: D1DatabaseSession | null;
  private primarySession: D1DatabaseSession | null = null;
  private primaryDb: Db | null = null;

  constructor(d1: D1Database, start: SessionStart, bookmark: string | null = null) {
    this.d1 = d1;
    this.fromBookmark = bookmark !== null;
    if (start === 'primary') {
      // Already on the primary: nothing a re-read there could tell more (mayBeBehind), no bookmark.
      this.session = null;
      this.db = this.primaryDb = openDb(d1);
    } else {
      this.session = d1.withSession(bookmark ?? start);
      this.db = openDb(this.session);
    }
  }

  /** A session that starts on the primary: for confirming a refusal a replica gave. */
  primary(): Db {
    if (!this.primaryDb) {
      this.primarySession = this.d1.withSession('first-primary');
      this.primaryDb = openDb(this.primarySession);
    }
    return this.primaryDb;
  }

  /** Whether the request's reads may have come from a replica (a primary re-read can tell more). */
  get mayBeBehind(): boolean {
    return this.primaryDb === null;
  }

  /** The latest bookmark of the request's sessions, or null when D1 gave none. */
  bookmark(): string | null {
    const marks = [this.session?.getBookmark() ?? null, this.primarySession?.getBookmark() ?? null].filter((b): b is string => !!b);
    return marks.length ? marks.reduce((a, b) => (b > a ? b : a)) : null;
  }
}

/**
 * Whether a D1 error is about the session's bookmark (too old to serve, or not one D1
 * knows): the request is then served from a fresh session rather than failed.
 */
export function isBookmarkError(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) if (/bookmark|commit.?token/i.test(e.message)) return true;
  return false;
}
