// Request caps shared by the route modules (docs/callers.md "Limits"), and by the console's
// forms (src/console/ui): this module imports only the fleet protocol's caps on a
// job's files, so the browser client bundles it.

// The caps on the files a job carries to an agent (a proof's input, child proofs, a
// proof to verify): the protocol's, which the agent's engines hold them to as well.
import { MAX_INPUT_BYTES } from 'prover-agent/protocol';
export { MAX_CHILD_PROOF_BYTES, MAX_CHILD_PROOFS, MAX_INPUT_BYTES, MAX_VERIFY_PROOF_BYTES } from 'prover-agent/protocol';
/** Longest multipart filename kept (a program's default name comes from its ELF's): longer ones are cut. */
export const MAX_FILENAME_LENGTH = 256;
/** Largest small JSON body (a project name, a program rename or move): 413 beyond it. */
export const MAX_JSON_BODY_BYTES = 64 * 1024;
/** Largest JSON body from the fleet (a log chunk or a result of at most 1 MiB of text each, ...). */
export const MAX_INTERNAL_JSON_BYTES = 4 * 1024 * 1024;
/**
 * The largest declared body read in one native pull (the HTTP framing ends it there) and
 * scanned whole (src/middleware/door.ts, src/lib/multipart.ts readBytesCapped); a larger
 * one is scanned as it comes, and a hostile one refused before its end.
 */
export const ONE_READ_BYTES = 64 * 1024;

/**
 * The caps of JSON bodies, by what a route takes: each route's door declares one
 * (src/middleware/door.ts `json(BODY_CAPS.…)`), and the door refuses a body past its
 * bytes (413: from its Content-Length before a byte is read, else while reading) or
 * nested deeper than its depth (422, found by a linear scan before anything parses it).
 */
export const BODY_CAPS = {
  /** What anyone may send with no credential (sign-in, password links, invitations): a few short fields. */
  anonymous: { maxBytes: 4 * 1024, maxDepth: 4 },
  /** A caller's small JSON: a project, a program rename, a webhook endpoint, a console form. */
  small: { maxBytes: MAX_JSON_BODY_BYTES, maxDepth: 16 },
  /**
   * A proof or execution input document (`{"input": [hex, ...]}`): never parsed, but checked
   * by one pass over its bytes that holds a bit per nesting level (src/lib/input-scan.ts
   * ProofInputScan), so its nesting costs nothing more and is left to that pass.
   */
  input: { maxBytes: MAX_INPUT_BYTES, maxDepth: Infinity },
  /** An agent about itself: a claim, presence, a leave, a heartbeat, a queue pull or ack (at most ~11 KiB by their schemas). */
  agentReport: { maxBytes: 64 * 1024, maxDepth: 8 },
  /** An agent about a job: a log chunk, an ending with its last chunk, a completion with inline results; a key publication's steps. */
  fleet: { maxBytes: MAX_INTERNAL_JSON_BYTES, maxDepth: 16 },
} as const satisfies Record<string, { maxBytes: number; maxDepth: number }>;

/** Console passwords: at least this long (set-password and invitation forms say so too). */
export const MIN_PASSWORD_LENGTH = 10;
/** Longer inputs are refused before hashing: the work is per request, not per byte, but bodies stay bounded. */
export const MAX_PASSWORD_LENGTH = 256;
/** Most GPUs a host may declare, and an agent token hold (its max_gpus); the most leases a token may hold at once. */
export const MAX_AGENT_GPUS = 10_000;
export const MAX_AGENT_LEASES = 10_000;
/** Longest machine type name (a host's declaration, an agent token's). */
export const MAX_MACHINE_TYPE_LENGTH = 100;
/** Longest API key name. */
export const MAX_API_KEY_NAME_LENGTH = 100;

/**
 * A character a stored name (of a program, project, API key, webhook endpoint,
 * organization or user) may not hold: a control character (C0 with tab, CR, LF and NUL;
 * DEL; C1), the line or paragraph separator, or a bidirectional formatting character
 * (the marks, embeddings, overrides and isolates), with which a name splits a line or
 * reads as something else (U+202E turns a key's name into "(owner@a.example)"). Refused
 * on the way in (lib/schemas.ts safeName), stripped from a multipart filename, and shown
 * escaped by the console (what was stored before).
 */
export const UNSAFE_NAME_CHARACTER = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

/** A character as its code point, `U+202E`: how a refusal names it and the console shows it. */
export const codePointName = (ch: string) => `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
/** Longest webhook endpoint URL and description. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;
export const MAX_WEBHOOK_DESCRIPTION = 256;

/**
 * Defaults of what one tenant or one host may hold of the service (docs/callers.md "Limits");
 * each can be overridden by a var of the same name (src/jobs/settings.ts tenantLimits).
 */
export const TENANT_DEFAULTS = {
  /** Bytes of one job's stored log (all its attempts), the truncation marker aside. */
  LOG_MAX_BYTES: 4 * 1024 * 1024,
  /** Chunks of one job's stored log (an agent sends at most two a second). */
  LOG_MAX_CHUNKS: 2048,
  /** Open event streams of one API key, and of one organization. */
  MAX_STREAMS_PER_KEY: 5,
  MAX_STREAMS_PER_ORG: 50,
  /** Live (unrevoked) API keys of one organization. */
  ORG_MAX_API_KEYS: 50,
};
/** How long an invitation link works (it is emailed to the invitee). */
export const INVITE_TTL_DAYS = 7;
/** How long an operator's set-password link works. */
export const SET_PASSWORD_LINK_TTL_HOURS = 72;
/** How long a password-reset link works. */
export const PASSWORD_RESET_TTL_MINUTES = 30;
