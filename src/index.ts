// The proving service Worker: HTTP (the Hono app), the local queue's consumer and
// the cron sweep. A Worker's main module may export only handlers.
import { env as startEnv } from 'cloudflare:workers';
import { app } from './app.ts';
import { openDb } from './db/client.ts';
import type { Env, JobNotice, LeaseCheck, MailRequest, WebhookMessage } from './env.ts';
import { acceptIntoEmulation, emulationEnabled } from './features/fleet/queue-emulation.ts';
import { isLeaseCheck, runLeaseChecks } from './jobs/lease-checks.ts';
import { sweep } from './jobs/sweep.ts';
import { runWebhookDeliveries } from './features/webhooks/delivery.ts';
import { isWebhookMessage } from './jobs/webhooks.ts';
import { leaseKeepMs, sweepRetention } from './features/retention/sweep.ts';
import { archiveAfterMs, sweepArchive } from './features/retention/archive.ts';
import { purgeSettleMs } from './features/retention/purge.ts';
import { isMailRequest, runMailRequests } from './features/accounts/password-reset.ts';
import { publicOriginProblem } from './features/accounts/mail.ts';

// Checked at start: a deployment without a good PUBLIC_ORIGIN sends no link (password
// resets, invitations answer 503 saying why); its operator reads this in the Worker's logs.
const originProblem = publicOriginProblem(startEnv);
if (originProblem) console.error(JSON.stringify({ level: 'error', msg: originProblem }));

export default {
  fetch: app.fetch,

  /**
   * The Worker's own queues, lease checks, webhook attempts and mail requests (every
   * environment), and locally the jobs queue, whose notices feed the pull API emulation.
   * Messages are told apart by their body.
   */
  async queue(batch, env) {
    const checks = batch.messages.filter((m) => isLeaseCheck(m.body));
    const webhooks = batch.messages.filter((m) => isWebhookMessage(m.body));
    const mail = batch.messages.filter((m) => isMailRequest(m.body));
    await Promise.all([
      checks.length && runLeaseChecks(checks, env),
      webhooks.length && runWebhookDeliveries(webhooks, env),
      mail.length && runMailRequests(mail, env),
    ]);
    if (checks.length + webhooks.length + mail.length === batch.messages.length) return;
    if (emulationEnabled(env)) return acceptIntoEmulation(batch as MessageBatch<JobNotice>, env);
    // Deployed queues have an HTTP pull consumer, not this Worker; should one be
    // attached by mistake, leave the notices for the agents.
    console.error(JSON.stringify({ level: 'error', msg: 'queue() called without DEV_QUEUE_EMULATION; retrying the batch' }));
    batch.retryAll({ delaySeconds: 60 });
  },

  async scheduled(_controller, env, ctx) {
    ctx.waitUntil(sweep(openDb(env.DB), env).then((r) => console.log(JSON.stringify({ level: 'info', msg: 'sweep', ...r }))));
    // Retention and the deleted records' objects still to delete (bounded per run: src/features/retention/sweep.ts),
    // then the archive of old finished records (bounded per run: src/features/retention/archive.ts).
    // One after the other, so a record the retention just tombstoned can be archived in the same run; a
    // failure of either is logged, and the other still runs (the next run retries both).
    const failed = (msg: string) => (err: unknown) => console.error(JSON.stringify({ level: 'error', msg, error: String(err) }));
    ctx.waitUntil(
      sweepRetention(openDb(env.DB), env.ARTIFACTS, Date.now(), undefined, leaseKeepMs(env), purgeSettleMs(env))
        .then((r) => console.log(JSON.stringify({ level: 'info', msg: 'retention sweep', ...r })), failed('retention sweep failed'))
        .then(() => sweepArchive(openDb(env.DB), env.ARTIFACTS, Date.now(), archiveAfterMs(env)))
        .then((r) => console.log(JSON.stringify({ level: 'info', msg: 'archive sweep', ...r })), failed('archive sweep failed')),
    );
  },
} satisfies ExportedHandler<Env, JobNotice | LeaseCheck | WebhookMessage | MailRequest>;
