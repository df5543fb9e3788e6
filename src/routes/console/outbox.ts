// /console/v1/outbox: the local mail outbox (src/lib/mail.ts), newest first, optionally
// to one address. It exists only under MAIL_SENDER = "outbox" (`npm start`, the tests),
// where nothing is really sent and a developer reads here the invitations and password
// links that would have been emailed; anywhere else it answers 404. Open, like the
// mail it stands in for (whoever runs the local stack reads everyone's mail).
import { Hono } from 'hono';
import { desc, eq } from 'drizzle-orm';
import type { AppEnv } from '../../app-env.ts';
import { mailOutbox } from '../../db/schema.ts';
import { mailSender } from '../../lib/mail.ts';
import { notFound } from '../../lib/errors.ts';
import { permit } from '../../middleware/permit.ts';

export const OUTBOX_PAGE_SIZE = 50;

/** Whether this deployment's mail goes to the local outbox (a misconfigured sender: no). */
export function outboxConfigured(env: AppEnv['Bindings']): boolean {
  try {
    return mailSender(env) === 'outbox';
  } catch {
    return false;
  }
}

export const outboxApi = new Hono<AppEnv>();

outboxApi.get('/', permit('public'), async (c) => {
  if (!outboxConfigured(c.env)) throw notFound('Outbox');
  const to = c.req.query('to')?.trim().toLowerCase();
  const items = await c.var.db
    .select()
    .from(mailOutbox)
    .where(to ? eq(mailOutbox.to, to) : undefined)
    .orderBy(desc(mailOutbox.created_at), desc(mailOutbox.id))
    .limit(OUTBOX_PAGE_SIZE);
  return c.json({ items }, 200);
});
