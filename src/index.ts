// The proving service Worker: HTTP (the Hono app), the local queue's consumer and
// the cron sweep. A Worker's main module may export only handlers.
import { env as startEnv } from 'cloudflare:workers';
import { app } from './app.ts';
import type { Env, JobNotice, LeaseCheck, MailRequest, WebhookMessage } from './env.ts';
import { acceptIntoEmulation, emulationEnabled } from './features/fleet/queue-emulation.ts';
import { isLeaseCheck, runLeaseChecks } from './jobs/lease-checks.ts';
import { sweep, sweepParts } from './jobs/sweep.ts';
import { INVOCATION_BUDGETS } from './jobs/invocations.ts';
import { CallBudget, metered, meteredPart } from './lib/metered.ts';
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
   * Messages are told apart by their body. A batch comes from one queue, and is worked
   * within that queue's budget per invocation (src/jobs/invocations.ts).
   */
  async queue(batch, env) {
    const checks = batch.messages.filter((m) => isLeaseCheck(m.body));
    const webhooks = batch.messages.filter((m) => isWebhookMessage(m.body));
    const mail = batch.messages.filter((m) => isMailRequest(m.body));
    const within = (budget: { calls: number }, name: string) => metered(env, new CallBudget(budget.calls, name));
    await Promise.all([
      checks.length && runLeaseChecks(checks, within(INVOCATION_BUDGETS.leaseChecks, 'lease checks')),
      webhooks.length && runWebhookDeliveries(webhooks, within(INVOCATION_BUDGETS.webhooks, 'webhook attempts')),
      mail.length && runMailRequests(mail, within(INVOCATION_BUDGETS.mail, 'mail requests')),
    ]);
    if (checks.length + webhooks.length + mail.length === batch.messages.length) return;
    if (emulationEnabled(env))
      return acceptIntoEmulation(batch as MessageBatch<JobNotice>, within(INVOCATION_BUDGETS.queueEmulation, 'queue emulation'));
    // Deployed queues have an HTTP pull consumer, not this Worker; should one be
    // attached by mistake, leave the notices for the agents.
    console.error(JSON.stringify({ level: 'error', msg: 'queue() called without DEV_QUEUE_EMULATION; retrying the batch' }));
    batch.retryAll({ delaySeconds: 60 });
  },

  /**
   * The cron, every minute: one invocation, one budget (src/jobs/invocations.ts cron),
   * each part of the work within its own share of it, so none starves another.
   */
  async scheduled(_controller, env, ctx) {
    const cron = metered(env, new CallBudget(INVOCATION_BUDGETS.cron.calls, 'cron'));
    const { parts } = INVOCATION_BUDGETS.cron;
    const part = (name: keyof typeof parts) => meteredPart(cron, parts[name], name);
    const failed = (msg: string) => (err: unknown) => console.error(JSON.stringify({ level: 'error', msg, error: String(err) }));
    const logged = (msg: string) => (r: object) => console.log(JSON.stringify({ level: 'info', msg, ...r }));
    ctx.waitUntil(sweep(part('sweep')).then(logged('sweep'), failed('sweep failed')));
    // Finished logs' compactions and garbage result uploads, each in its own part (src/jobs/sweep.ts sweepParts).
    ctx.waitUntil(sweepParts(cron).then(logged('sweep parts'), failed('sweep parts failed')));
    // Retention and the deleted records' objects still to delete (src/features/retention/sweep.ts),
    // then the archive of old finished records (src/features/retention/archive.ts).
    // One after the other, so a record the retention just tombstoned can be archived in the same run; a
    // failure of either is logged, and the other still runs (the next run retries both).
    ctx.waitUntil(
      sweepRetention(part('retention'), Date.now(), undefined, leaseKeepMs(env), purgeSettleMs(env))
        .then(logged('retention sweep'), failed('retention sweep failed'))
        .then(() => sweepArchive(part('archive'), Date.now(), archiveAfterMs(env)))
        .then(logged('archive sweep'), failed('archive sweep failed')),
    );
  },
} satisfies ExportedHandler<Env, JobNotice | LeaseCheck | WebhookMessage | MailRequest>;
