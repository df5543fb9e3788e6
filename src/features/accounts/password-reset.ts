// Password resets asked for by email (POST /console/v1/auth/password-reset). Anyone may
// ask for any email, so the answer must not tell whether the email has an account, by its
// body or by its time: the request's own work is the same for every email (the per-client
// limit, then one message on the Worker's own MAIL queue, src/env.ts), and whether an
// account has the email is decided here, by the queue's consumer, after the answer: a
// link is made only for an account, at most RESET_LINKS_PER_EMAIL per window (./users.ts
// makeResetLink), and mailed to it, pointing at PUBLIC_ORIGIN (./mail.ts). The time of a
// database write, a mail API call or a log line no longer rides on the answer
// (`npm run bench:account-timing` prints both populations).
import { openDb } from '../../db/client.ts';
import type { Env, MailRequest } from '../../env.ts';
import { randomToken, sha256Hex } from '../../lib/crypto.ts';
import { newLinkId } from '../../lib/ids.ts';
import { passwordResetMessage, PASSWORD_RESET_TTL_MINUTES, publicOriginProblem, publicOrigin, send } from './mail.ts';
import { makeResetLink } from './users.ts';

/** Whether a queue message's body is a MailRequest (the Worker's queues are told apart by body). */
export const isMailRequest = (body: unknown): body is MailRequest =>
  typeof body === 'object' &&
  body !== null &&
  (body as MailRequest).type === 'password-reset' &&
  typeof (body as MailRequest).email === 'string';

/**
 * The consumer starts this long after the request, so its work (for an account: a link
 * written, a mail sent) never overlaps the answer where one Worker does both (wrangler
 * dev, where the queue is delivered in the same process at once).
 */
const AFTER_THE_ANSWER_SECONDS = 1;

/** Asks for a reset link for `email`: a message on the MAIL queue, whatever the email. */
export async function askPasswordReset(env: Pick<Env, 'MAIL'>, email: string): Promise<void> {
  await env.MAIL.send({ type: 'password-reset', email } satisfies MailRequest, { delaySeconds: AFTER_THE_ANSWER_SECONDS });
}

/**
 * Makes and mails the reset link of `email` if an account has it (and its window allows
 * one more). A failure to make or to mail it is thrown, for the queue to try again (a
 * new link then revokes the unsent one); a deployment without PUBLIC_ORIGIN sends none
 * and says so.
 */
async function mailResetLink(env: Env, email: string): Promise<void> {
  const problem = publicOriginProblem(env);
  if (problem) {
    console.error(JSON.stringify({ level: 'error', msg: `password reset for an email not sent: ${problem}` }));
    return;
  }
  const token = randomToken('rst', 32);
  const made = await makeResetLink(openDb(env.DB), email, {
    id: newLinkId(),
    tokenHash: await sha256Hex(token),
    lifetime: `+${PASSWORD_RESET_TTL_MINUTES} minutes`,
  });
  if (made) await send(env, passwordResetMessage({ consoleUrl: publicOrigin(env), token, to: email }));
}

/** The MAIL queue's consumer (messages isMailRequest picked): each request made and mailed, or retried by the queue. */
export async function runMailRequests(messages: readonly Message<unknown>[], env: Env): Promise<void> {
  for (const message of messages) {
    try {
      await mailResetLink(env, (message.body as MailRequest).email);
      message.ack();
    } catch (err) {
      console.error(JSON.stringify({ level: 'error', msg: 'a password reset mail failed; the queue retries it', error: String(err) }));
      message.retry({ delaySeconds: 10 });
    }
  }
}
