// One door for every request (issue 28 item 1). Each route declares, where it is
// declared, what it takes (src/middleware/door-kinds.ts): its credential kind, its body
// (kind and caps, from src/lib/limits.ts BODY_CAPS) and its rate budget. The declaration
// is the route's first middleware (createRoute's `middleware`, or first among a plain
// route's handlers), registered here so the suite finds it in app.routes (declaredBy):
// test/worker/door.test.ts walks every route, and a route that declares nothing fails
// it; at runtime the app's guard (doorGuard) refuses such a route before it runs.
//
// Before the route's handler, in this order:
//   1. an address past its budget of refused credentials is refused, 429 (doorGuard);
//   2. the rate budget: per credential, counted by the credential's hash (or a queue
//      token's claims) with no D1 read; per client address for routes that take none;
//   3. the credential, before one byte of the body is read, and with no D1 write for
//      one the service does not know. An API key is checked in the route's first D1
//      batch (one round trip), and the body's first read waits for that check
//      (gateBodyOnKey, src/middleware/auth.ts); every other kind here, at the door;
//   4. the body: a route that takes none has it dropped unread; one whose Content-Length
//      is past the cap is refused (413) before a byte is read; the rest is read through
//      its cap (413) and, for JSON, a linear nesting scan (422), before anything parses it.
// After the handler, a refused credential (401) counts against its address's budget.
import type { Context, MiddlewareHandler } from 'hono';
import { createMiddleware } from 'hono/factory';
import { matchedRoutes } from 'hono/route';
import type { AppEnv } from '../app-env.ts';
import type { Env } from '../env.ts';
import { may, PERMISSIONS, type Action } from '../auth/permissions.ts';
import { isJsonContentType } from '../lib/body.ts';
import { ONE_READ_BYTES } from '../lib/limits.ts';
import { ApiError, ValidationError } from '../lib/errors.ts';
import { JsonNesting } from '../lib/input-scan.ts';
import { bodyChunks, multipartBoundary, tooLarge, type FormLimits } from '../lib/multipart.ts';
import { gateBodyOnKey } from './auth.ts';
import type { ConsoleEnv } from './console-auth.ts';
import type { Body, ByteCap, ConsoleDoor, Declaration } from './door-kinds.ts';
import {
  countFailedCredential,
  limitAddress,
  limitApiKey,
  limitConsole,
  limitToken,
  tooManyFailures,
  type EndpointClass,
} from './rate-limit.ts';

const DECLARED = new WeakMap<object, Declaration>();

/** What a handler of app.routes declares, if it is a door. */
export const declaredBy = (handler: unknown): Declaration | undefined =>
  typeof handler === 'function' ? DECLARED.get(handler) : undefined;

/** The door of a route: its declaration, enforced by `enforce` before the route's next handler. */
function declare<E extends AppEnv>(declaration: Declaration, enforce: (c: Context<E>) => Promise<void>): MiddlewareHandler<E> {
  const gate = createMiddleware<E>(async (c, next) => {
    c.set('door', declaration);
    await enforce(c);
    await next();
  });
  DECLARED.set(gate, declaration);
  return gate;
}

// ---------------------------------------------------------------------------
// Bodies

/** The body of a route that takes none. */
export const NO_BODY: Body = { kind: 'none' };
/** A JSON body under caps of BODY_CAPS. */
export const json = (caps: { maxBytes: number; maxDepth: number }): Body => ({ kind: 'json', ...caps });
/** A multipart/form-data body: its whole cap, each named part's, and (orJson) the caps of the JSON body it may be instead. */
export const multipart = (form: {
  maxBytes: ByteCap;
  parts?: Record<string, number>;
  orJson?: { maxBytes: number; maxDepth: number };
}): Body => ({
  kind: 'multipart',
  parts: {},
  ...form,
});
/** Raw bytes with a Content-Length of at most `maxBytes`, streamed on as they come. */
export const stream = (maxBytes: number): Body => ({ kind: 'stream', maxBytes });

const capOf = (cap: ByteCap, c: { env: Env }) => (typeof cap === 'function' ? cap(c.env) : cap);

/** What bounding a body needs of a request's context, whatever its app's variables. */
interface BodyContext {
  req: { raw: Request };
  env: Env;
  set(key: 'bodyRefusal', value: Error): void;
}

/** The caps a multipart route reads its form under, as its door declared them. */
export function declaredForm(c: Context<AppEnv>): FormLimits {
  const body = c.get('door')?.body;
  if (body?.kind !== 'multipart') throw new Error(`${c.req.method} ${c.req.path} reads a form but its door declares no multipart body`);
  return { maxBytes: capOf(body.maxBytes, c), parts: body.parts };
}

/** The declared Content-Length; undefined when none (a chunked body). */
function declaredLength(req: Request): number | undefined {
  const header = req.headers.get('content-length');
  if (header === null) return undefined;
  const length = Number(header);
  if (!Number.isSafeInteger(length) || length < 0) throw new ApiError(400, 'Malformed Content-Length');
  return length;
}

/** The media types a body kind is read as; null for raw bytes, whatever their type. */
function mediaTypesOf(body: Body): string[] | null {
  if (body.kind === 'json') return ['application/json'];
  if (body.kind === 'multipart') return body.orJson ? ['application/json', 'multipart/form-data'] : ['multipart/form-data'];
  return null;
}

/**
 * 415 for a body sent as a media type the route does not read (`curl -d`'s form
 * encoding, a string's text/plain), before a byte of it is read, naming the ones it
 * does (and in Accept-Post or Accept-Patch, RFC 9110 15.5.16). A body with no
 * Content-Type is JSON, as the reference (FastAPI) reads it (src/lib/body.ts); no body
 * at all is left to the route, which says what is missing.
 */
function refuseMediaType(req: Request, declared: Body, length: number | undefined): void {
  const accepted = mediaTypesOf(declared);
  if (!accepted || !req.body || length === 0) return;
  const type = req.headers.get('content-type');
  if (accepted.includes('application/json') && isJsonContentType(type)) return;
  if (accepted.includes('multipart/form-data') && type && /^\s*multipart\/form-data\s*(;|$)/i.test(type)) return;
  const hint = accepted.includes('application/json') ? `-H 'Content-Type: application/json'` : `-F name=@file`;
  throw new ApiError(
    415,
    `Unsupported Content-Type ${type === null ? '(none)' : JSON.stringify(type)}: send this body as ${accepted.join(' or ')} (with curl: ${hint})`,
    req.method === 'PATCH'
      ? { 'Accept-Patch': accepted.join(', ') }
      : req.method === 'POST'
        ? { 'Accept-Post': accepted.join(', ') }
        : undefined,
  );
}

const tooDeep = (maxDepth: number, at: number) =>
  new ValidationError([{ loc: ['body', at], msg: `JSON decode error: nested deeper than ${maxDepth} levels`, type: 'json_invalid' }]);

/**
 * The body as the route declared it: none dropped unread; past its cap by its
 * Content-Length, 413 before a byte is read; otherwise read through its bounds.
 *
 * What becomes of bytes nothing reads: for a caller with a credential, the runtime takes
 * them in after the answer (on Cloudflare, the edge: no CPU of the Worker's), so that a
 * client still sending its upload reads the 401 or 413 rather than a reset connection.
 * A route with no credential (`stopUnread`) takes a few KiB from a legitimate caller, whose
 * body has arrived whole by then: whatever more comes is not taken in at all (the client's
 * stream is cancelled), so a hostile sender cannot make the runtime receive 100 MB.
 */
function boundBody(c: BodyContext, declared: Body, { stopUnread = false } = {}): void {
  const req = c.req.raw;
  const unread = () => {
    if (stopUnread && req.body) void req.body.cancel().catch(() => undefined);
  };
  if (declared.kind === 'none') {
    // Nothing downstream can read what it was not declared to take.
    unread();
    if (req.body) c.req.raw = new Request(req, { body: null });
    return;
  }
  const length = declaredLength(req);
  try {
    refuseMediaType(req, declared, length);
  } catch (err) {
    unread();
    throw err;
  }
  // A route that takes a form or JSON (a proof submission) is bounded as what it got.
  const body: Body =
    declared.kind === 'multipart' && declared.orJson && !multipartBoundary(req.headers.get('content-type') ?? undefined)
      ? { kind: 'json', ...declared.orJson }
      : declared;
  const cap = capOf(body.maxBytes, c);
  if (length !== undefined && length > cap) {
    unread();
    throw tooLarge(cap);
  }
  if (body.kind === 'stream' && length === undefined)
    throw new ApiError(411, 'Content-Length is required: this body is streamed straight to storage');
  if (!req.body) return;
  // A declared length within the cap bounds a form or a stream already (the HTTP framing
  // ends the body there, and their readers count it too): their bytes go to R2 with no JS
  // of ours per chunk. JSON is always read through its cap and the nesting scan (but a
  // proof input's, which its route's own one pass scans: BODY_CAPS.input).
  if (body.kind !== 'json' && length !== undefined) return;
  c.req.raw = new Request(req, {
    body: bounded(c, req.body, cap, body.kind === 'json' && Number.isFinite(body.maxDepth) ? new JsonNesting(body.maxDepth) : null, length),
    duplex: 'half',
  } as RequestInit);
}

/**
 * `source`, pulled only as its reader asks (nothing is read ahead), and refused once it
 * passes `cap` bytes (413) or `nesting` finds it too deep (422): the client's stream is
 * cancelled (a body with no end would otherwise be taken in for ever), and the refusal
 * kept on the request (bodyRefusal) so that a reader that turns a failed read into an
 * error of its own is overruled by onError. A small body (a declared `length` of at most
 * ONE_READ_BYTES, within the cap) is read in one pull, natively: the HTTP framing ends it
 * there, so it is the same bound with no JS of ours per chunk (most JSON bodies, the
 * fleet's reports among them, are a few hundred bytes; a larger one is still scanned as
 * it comes, and a hostile one refused before its end).
 */
function bounded(c: BodyContext, source: ReadableStream<Uint8Array>, cap: number, nesting: JsonNesting | null, length?: number) {
  let chunks: AsyncGenerator<Uint8Array> | undefined;
  let total = 0;
  const stop = async () => {
    await chunks?.return(undefined);
    await source.cancel().catch(() => undefined);
  };
  const refuse = async (err: Error): Promise<never> => {
    c.set('bodyRefusal', err);
    await stop();
    throw err;
  };
  const take = async (controller: ReadableStreamDefaultController<Uint8Array>, value: Uint8Array) => {
    total += value.byteLength;
    if (total > cap) await refuse(tooLarge(cap));
    const at = nesting ? nesting.push(value) : -1;
    if (at >= 0) await refuse(tooDeep(nesting!.maxDepth, at));
    controller.enqueue(value);
  };
  return new ReadableStream<Uint8Array>(
    {
      pull: async (controller) => {
        if (length !== undefined && length <= Math.min(cap, ONE_READ_BYTES)) {
          const whole = new Uint8Array(await new Response(source).arrayBuffer());
          if (whole.byteLength > 0) await take(controller, whole);
          return controller.close();
        }
        chunks ??= bodyChunks(source);
        const { done, value } = await chunks.next();
        if (done) return controller.close();
        await take(controller, value);
      },
      cancel: stop,
    },
    { highWaterMark: 0 },
  );
}

/**
 * For a door that has checked its credential already (a fleet token, a console session):
 * a small JSON body (a declared length of at most ONE_READ_BYTES, within its cap) is taken
 * in here, in one native read, scanned, and handed to the route through Hono's body cache
 * (jsonBody, `c.req.json()`), with no stream of ours around it. Anything else is left for
 * boundBody bounds it. Answers whether it took the body.
 */
async function takeSmallJson(c: Context, declared: Body): Promise<boolean> {
  if (declared.kind !== 'json' || !c.req.raw.body) return false;
  const length = declaredLength(c.req.raw);
  if (length === undefined || length > Math.min(declared.maxBytes, ONE_READ_BYTES)) return false;
  refuseMediaType(c.req.raw, declared, length);
  const bytes = new Uint8Array(await c.req.raw.arrayBuffer());
  // The framing ends the body at its declared length; counted anyway.
  if (bytes.byteLength > declared.maxBytes) throw tooLarge(declared.maxBytes);
  const at = Number.isFinite(declared.maxDepth) ? new JsonNesting(declared.maxDepth).push(bytes) : -1;
  if (at >= 0) throw tooDeep(declared.maxDepth, at);
  // Hono keeps each body read as its promise (hono/request.js #cachedBody), whatever its types say.
  (c.req.bodyCache as { arrayBuffer?: Promise<ArrayBuffer> }).arrayBuffer = Promise.resolve(bytes.buffer);
  return true;
}

// ---------------------------------------------------------------------------
// Credentials the door checks itself, or hands to the kind's own check

/** For a refusal of a request nothing will read from: its body is not taken in (see boundBody). */
const refuseUnread =
  (c: { req: { raw: Request } }) =>
  (err: unknown): never => {
    void c.req.raw.body?.cancel().catch(() => undefined);
    throw err;
  };

/** The request's client address (Cloudflare's CF-Connecting-IP; `unknown` locally without it). */
export const clientAddress = (c: Context) => c.req.header('cf-connecting-ip') ?? 'unknown';

/** A console route's need: its role-free door, or an action its member's role must allow. */
function permitConsole(c: Context<ConsoleEnv>, need: Action | ConsoleDoor): void {
  if (need === 'account') return;
  if (need === 'operator') {
    if (!c.get('user').is_operator) throw new ApiError(403, 'Operators only');
    return;
  }
  const membership = c.get('membership');
  if (!membership) throw new Error(`${c.req.method} ${c.req.path}: ${need} is an organization's action, outside one`);
  if (!may(membership.role, need))
    throw new ApiError(
      403,
      `Your role (${membership.role}) in ${membership.orgName} does not allow this: ${PERMISSIONS[need].covers.toLowerCase()} needs ${PERMISSIONS[need].least} or higher`,
    );
  c.set('action', need);
}

/**
 * How a token of the fleet is presented and checked (src/features/fleet/auth.ts,
 * src/features/configs/publisher-auth.ts): `present` names whose budget the request
 * counts against (the token's hash, say; 401 when there is no token) with no D1, and
 * hands back the check, run once the budget allows it.
 */
export type TokenCheck<E extends AppEnv> = (c: Context<E>) => Promise<{ key: string; check: () => Promise<void> }>;

/**
 * Credentials a door found live a moment ago, by hash, for a route whose own D1 batch
 * checks the credential again (a claim, a heartbeat): the door takes a recent answer
 * instead of reading D1 once more, and nothing the route writes rests on it. Bounded:
 * cleared when full.
 */
export class SeenLive {
  private readonly until = new Map<string, number>();
  private readonly ttlMs: number;
  constructor(ttlMs: number) {
    this.ttlMs = ttlMs;
  }
  has(key: string, now = Date.now()): boolean {
    const until = this.until.get(key);
    if (until === undefined) return false;
    if (until > now) return true;
    this.until.delete(key);
    return false;
  }
  add(key: string, now = Date.now()): void {
    if (this.until.size >= 10_000) this.until.clear();
    this.until.set(key, now + this.ttlMs);
  }
}

/** The doors, one per credential kind. */
export const door = {
  /** The public API: an API key whose rights allow `action`, counted in its endpoint class (`rate`). */
  apiKey: (action: Action, o: { body?: Body; rate: EndpointClass }) => {
    const body = o.body ?? NO_BODY;
    return declare<AppEnv>({ credential: 'apiKey', need: action, body, rate: o.rate }, async (c) => {
      if (!c.get('apiKeyHash')) throw new Error(`${c.req.method} ${c.req.path} takes an API key, but its app reads none (requireApiKey)`);
      await limitApiKey(c);
      c.set('action', action);
      boundBody(c, body);
      gateBodyOnKey(c);
    });
  },

  /** The console API: a live session (its app checks it: requireConsoleUser), whose member's role allows `need`. */
  console: (need: Action | ConsoleDoor, o: { body?: Body; rate?: 'console' | 'console-sends' } = {}) => {
    const body = o.body ?? NO_BODY;
    const rate = o.rate ?? 'console';
    return declare<ConsoleEnv>({ credential: 'console', need, body, rate }, async (c) => {
      if (!c.get('user')) throw new Error(`${c.req.method} ${c.req.path} takes a console session, but its app checks none`);
      await limitConsole(c, rate);
      permitConsole(c, need);
      if (!(await takeSmallJson(c, body))) boundBody(c, body);
    });
  },

  /** No credential, a few KiB at most: the console's sign-in, password links and invitations, per client address. */
  anonymous: (o: { body?: Body } = {}) => {
    const body = o.body ?? NO_BODY;
    return declare<AppEnv>({ credential: 'none', body, rate: 'anonymous' }, async (c) => {
      await limitAddress(c, 'anonymous', clientAddress(c)).catch(refuseUnread(c));
      boundBody(c, body, { stopUnread: true });
    });
  },

  /** No credential and no body: pages, documents, health, per client address. */
  open: () =>
    declare<AppEnv>({ credential: 'none', body: NO_BODY, rate: 'open' }, async (c) => {
      await limitAddress(c, 'open', clientAddress(c));
      boundBody(c, NO_BODY);
    }),

  /** A signed link: the signature in its query is the credential (checked by the route, before it reads anything), per client address. */
  signedLink: () =>
    declare<AppEnv>({ credential: 'signedLink', body: NO_BODY, rate: 'open' }, async (c) => {
      await limitAddress(c, 'open', clientAddress(c));
      boundBody(c, NO_BODY);
    }),

  /** A token of the fleet (`declaration.credential`), counted per token, checked by `present` before the body. */
  token: <E extends AppEnv>(declaration: Declaration, present: TokenCheck<E>) =>
    declare<E>(declaration, async (c) => {
      const { key, check } = await present(c);
      limitToken(c, declaration.rate, key);
      await check();
      if (!(await takeSmallJson(c, declaration.body))) boundBody(c, declaration.body);
    }),
};

// ---------------------------------------------------------------------------
// The app's guard

/** Addresses past their budget of refused credentials, until when (this isolate's view; the binding counts for all). */
const refusedUntil = new Map<string, number>();

/** How long an address past its budget of refused credentials is turned away: the binding's period. */
const REFUSED_FOR_MS = 60_000;

/**
 * The app's first middleware: finds the route's door (a route served without one is a
 * bug, refused here before it runs), turns away an address past its budget of refused
 * credentials, and counts each refused credential (401, or a signed link's 403) against
 * its address once the route answered.
 */
export const doorGuard = createMiddleware<AppEnv>(async (c, next) => {
  const routes = matchedRoutes(c);
  if (routes.some((r) => r.method !== 'ALL')) {
    const declaration = routes
      .map((r) => declaredBy(r.handler))
      .filter((d) => d !== undefined)
      .at(-1);
    if (!declaration) throw new Error(`${c.req.method} ${c.req.path} declares no door (src/middleware/door.ts): refused`);
    c.set('door', declaration);
  }
  const address = clientAddress(c);
  const until = refusedUntil.get(address);
  if (until !== undefined) {
    if (until > Date.now()) refuseUnread(c)(tooManyFailures());
    refusedUntil.delete(address);
  }
  await next();
  const refused = c.res.status === 401 || (c.get('door')?.credential === 'signedLink' && c.res.status === 403);
  if (refused && !(await countFailedCredential(c.env, address))) {
    if (refusedUntil.size >= 10_000) refusedUntil.clear();
    refusedUntil.set(address, Date.now() + REFUSED_FOR_MS);
  }
});
