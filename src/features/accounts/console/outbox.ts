// /console/v1/outbox: the local mail outbox (../mail.ts), newest first, optionally
// to one address. It exists only under MAIL_SENDER = "outbox" (`npm start`, the tests),
// where nothing is really sent and a developer reads here the invitations and password
// links that would have been emailed; anywhere else it answers 404. Open, like the
// mail it stands in for (whoever runs the local stack reads everyone's mail).
import { Hono } from 'hono';
import type { AppEnv } from '../../../app-env.ts';
import { notFound } from '../../../lib/errors.ts';
import { door } from '../../../middleware/door.ts';
import { outboxConfigured, outboxMessages } from '../mail.ts';

export const OUTBOX_PAGE_SIZE = 50;

export const outboxApi = new Hono<AppEnv>();

outboxApi.get('/', door.open(), async (c) => {
  if (!outboxConfigured(c.env)) throw notFound('Outbox');
  const to = c.req.query('to')?.trim().toLowerCase();
  return c.json({ items: await outboxMessages(c.get('db'), to, OUTBOX_PAGE_SIZE) }, 200);
});
