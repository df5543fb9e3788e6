// Email: how the service reaches a person at their address, and the only way a link
// that grants an account (an invitation, a set-password or password-reset link) leaves
// the service. Such a link goes to the person it is for, never back to whoever caused
// it (README "Console", SECURITY.md "Console accounts, links and email").
//
// One interface, `send(env, message)`, and the sender the environment names:
// - MAIL_SENDER = "outbox" (local only: `npm start`, the tests): the message is stored
//   in D1 (`mail_outbox`, read at /console/outbox) and logged as one `[mail] …` line.
// - MAIL_SENDER = "http": a JSON POST to MAIL_API_URL with `Authorization: Bearer
//   MAIL_API_KEY`, body {from, to: [address], subject, text} (the shape of Resend's
//   POST /emails; a relay adapts other providers). Runs anywhere `fetch` does: the
//   Worker, and the operator tool in Node. Chosen over Cloudflare's send_email binding,
//   which reaches only addresses verified on the account (README "Configuration").
// - unset: nothing is sent (`send` says so); the operator tool prints its links instead.
import { desc, eq } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/d1';
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';
import { mailOutbox } from '../../db/schema.ts';
import { ApiError } from '../../lib/errors.ts';
import { newMailId } from '../../lib/ids.ts';
import { INVITE_TTL_DAYS, PASSWORD_RESET_TTL_MINUTES, SET_PASSWORD_LINK_TTL_HOURS } from '../../lib/limits.ts';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  /** The link the message carries (the outbox shows it; a test opens it). */
  link?: string;
}

/**
 * What `send` needs of the environment: the Worker's Env (src/env.ts names these vars),
 * or the operator tool's settings (Node, which has no D1 binding: the outbox there is
 * written in its own SQL, src/admin/statements.ts outboxInsert).
 */
export interface MailEnv {
  MAIL_SENDER?: string;
  MAIL_API_URL?: string;
  MAIL_API_KEY?: string;
  MAIL_FROM?: string;
  /** The D1 binding (the Worker's); typed by what drizzle takes, so Node code can name this type. */
  DB?: Parameters<typeof drizzle>[0];
}

export type MailSender = 'outbox' | 'http';

/** The configured sender, or undefined when mail is not configured (a misspelt one is an error, not silence). */
export function mailSender(env: MailEnv): MailSender | undefined {
  const s = env.MAIL_SENDER?.trim();
  if (!s) return undefined;
  if (s === 'outbox' || s === 'http') return s;
  throw new MailError(`MAIL_SENDER must be "outbox" or "http", not "${s}"`);
}

export class MailError extends Error {}

/** Whether this deployment's mail goes to the local outbox (a misconfigured sender: no). */
export function outboxConfigured(env: MailEnv): boolean {
  try {
    return mailSender(env) === 'outbox';
  } catch {
    return false;
  }
}

/** The newest `limit` messages of the local outbox, optionally to one address. */
export const outboxMessages = <TRunResult, TSchema extends Record<string, unknown>>(
  db: BaseSQLiteDatabase<'async', TRunResult, TSchema>,
  to: string | undefined,
  limit: number,
) =>
  db
    .select()
    .from(mailOutbox)
    .where(to ? eq(mailOutbox.to, to) : undefined)
    .orderBy(desc(mailOutbox.created_at), desc(mailOutbox.id))
    .limit(limit);

/** Longest body a provider's error is quoted with. */
const ERROR_EXCERPT = 200;

/**
 * Sends a message; resolves to false when no sender is configured (nothing sent),
 * true once the sender has taken it. Throws MailError when the sender refuses it.
 */
export async function send(env: MailEnv, message: MailMessage): Promise<boolean> {
  const sender = mailSender(env);
  if (!sender) return false;
  if (sender === 'outbox') {
    if (!env.DB) throw new MailError('the outbox sender needs the DB binding');
    await drizzle(env.DB)
      .insert(mailOutbox)
      .values({ id: newMailId(), to: message.to, subject: message.subject, text: message.text, link: message.link ?? null });
    // One line a developer reads in `npm start`'s output.
    console.log(`[mail] to ${message.to} subject ${JSON.stringify(message.subject)}${message.link ? ` link ${message.link}` : ''}`);
    return true;
  }
  const { MAIL_API_URL: url, MAIL_API_KEY: key, MAIL_FROM: from } = env;
  if (!url || !key || !from) throw new MailError('MAIL_SENDER = "http" needs MAIL_API_URL, MAIL_API_KEY (a secret) and MAIL_FROM');
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ from, to: [message.to], subject: message.subject, text: message.text }),
      signal: AbortSignal.timeout(10_000),
    });
  } catch (err) {
    throw new MailError(`the mail API could not be reached: ${(err as Error).message}`);
  }
  if (!res.ok) {
    const body = (await res.text().catch(() => '')).slice(0, ERROR_EXCERPT);
    throw new MailError(`the mail API answered ${res.status}${body ? `: ${body}` : ''}`);
  }
  await res.body?.cancel();
  return true;
}

// ---------------------------------------------------------------------------
// Where links point: the deployment's public origin (PUBLIC_ORIGIN), from configuration
// only, never from a request (whose Host its sender chooses: a reset asked with
// `Host: attacker.example` would mail the victim a genuine link to the attacker's site).

/** No link can be made: answered 503 with what the operator must set. */
export class PublicOriginError extends ApiError {
  constructor(message: string) {
    super(503, message);
  }
}

/** Hosts a public origin may name over plain http (local development). */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * The console's public origin, `scheme://host[:port]`, from PUBLIC_ORIGIN: https, or http
 * on a loopback host. Throws PublicOriginError saying what to set when it is missing or
 * not such an origin: such a deployment sends no link (the Worker also says so at start,
 * src/index.ts).
 */
export function publicOrigin(env: { PUBLIC_ORIGIN?: string }): string {
  const value = env.PUBLIC_ORIGIN?.trim().replace(/\/$/, '');
  const fix =
    'set PUBLIC_ORIGIN (the https origin people open the console at) under [env.<name>.vars] in wrangler.toml, then deploy (README "Configuration")';
  if (!value) throw new PublicOriginError(`PUBLIC_ORIGIN is not set, so no link (password reset, invitation) can be sent: ${fix}`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new PublicOriginError(`PUBLIC_ORIGIN (${value}) is not a URL: ${fix}`);
  }
  if (url.origin !== value)
    throw new PublicOriginError(`PUBLIC_ORIGIN (${value}) must be an origin only (no path, query or credentials): ${fix}`);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)))
    throw new PublicOriginError(`PUBLIC_ORIGIN (${value}) must be https (http only on 127.0.0.1, localhost or [::1]): ${fix}`);
  return url.origin;
}

/** Why PUBLIC_ORIGIN would send no link, or null when it is good: the Worker's check at start. */
export function publicOriginProblem(env: { PUBLIC_ORIGIN?: string }): string | null {
  try {
    publicOrigin(env);
    return null;
  } catch (err) {
    if (err instanceof PublicOriginError) return err.message;
    throw err;
  }
}

// ---------------------------------------------------------------------------
// The messages. Every link carries its token after '#': a browser never sends it, so
// no server logs it.

export { INVITE_TTL_DAYS, PASSWORD_RESET_TTL_MINUTES, SET_PASSWORD_LINK_TTL_HOURS };

const consoleLink = (consoleUrl: string, page: string, token: string) => `${consoleUrl.replace(/\/+$/, '')}/console/${page}#token=${token}`;

export function inviteMessage(o: {
  consoleUrl: string;
  token: string;
  to: string;
  orgName: string;
  role: string;
  invitedBy: string;
}): MailMessage {
  const link = consoleLink(o.consoleUrl, 'invite', o.token);
  return {
    to: o.to,
    subject: `You are invited to ${o.orgName}`,
    text: `${o.invitedBy} invites you to join ${o.orgName} as ${o.role} on the proving console.\n\nOpen this link within ${INVITE_TTL_DAYS} days to accept (it works once):\n${link}\n\nIf you did not expect this, ignore it.\n`,
    link,
  };
}

export function setPasswordMessage(o: { consoleUrl: string; token: string; to: string }): MailMessage {
  const link = consoleLink(o.consoleUrl, 'set-password', o.token);
  return {
    to: o.to,
    subject: 'Set your proving console password',
    text: `An account was made for you on the proving console.\n\nOpen this link within ${SET_PASSWORD_LINK_TTL_HOURS} hours to set your password (it works once):\n${link}\n`,
    link,
  };
}

export function passwordResetMessage(o: { consoleUrl: string; token: string; to: string }): MailMessage {
  const link = consoleLink(o.consoleUrl, 'reset-password', o.token);
  return {
    to: o.to,
    subject: 'Reset your proving console password',
    text: `Someone asked to reset the password of this account on the proving console.\n\nOpen this link within ${PASSWORD_RESET_TTL_MINUTES} minutes to choose a new one (it works once, and signs you out everywhere):\n${link}\n\nIf it was not you, ignore this message: your password stays as it is.\n`,
    link,
  };
}
