// The scheduled sweep (cron, every minute): nothing may be stranded.
// - Leases whose agent stopped heartbeating are expired and their jobs requeued
//   (claims also do this, so a live fleet does not wait for the cron).
// - Jobs left queued past RENOTIFY_AFTER_SECONDS get a fresh queue notice, so a
//   lost message delays a job but never strands it; but only when some live agent
//   could serve them: a job nobody can serve is not bounced around, it waits and
//   says why in its logs (once per distinct reason).
import { and, eq, gte, lt } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { agents, jobs } from '../db/schema.ts';
import type { Env } from '../env.ts';
import { notifyJob } from './dispatch.ts';
import { appendServiceLog } from './logs.ts';
import { fleetSettings } from './settings.ts';
import { expireLeases, gpusUsed, type JobRow } from './state.ts';

interface LiveAgent {
  gpus: number;
  engines: string[];
  configs: string[];
}

/**
 * Why none of `live` can run `job`, or null when one can: the rule of servableBy()
 * (src/jobs/state.ts), which claims apply in SQL, told in words.
 */
export function whyUnservable(job: Pick<JobRow, 'engine' | 'config_id' | 'num_gpus'>, live: LiveAgent[]): string | null {
  if (live.length === 0) return 'no prover agent is online';
  const engine = live.filter((a) => a.engines.includes(job.engine));
  if (engine.length === 0) return `no online agent runs the '${job.engine}' engine`;
  const config = engine.filter((a) => a.configs.length === 0 || a.configs.includes(job.config_id));
  if (config.length === 0) return `no online agent serves config ${job.config_id}`;
  const needed = gpusUsed(job.engine, job.num_gpus);
  if (needed === 0) return null;
  const most = Math.max(...config.map((a) => a.gpus));
  if (most < needed) return `the job needs ${needed} GPU${needed === 1 ? '' : 's'} (of the ${job.num_gpus} it asked for); the largest online agent for its config has ${most}`;
  return null;
}

export async function sweep(db: Db, env: Env, now = Date.now()): Promise<{ requeued: number; renotified: number; waiting: number }> {
  const settings = fleetSettings(env);
  const { requeued } = await expireLeases(db, settings, now);
  for (const j of requeued) await notifyJob(env, { job_id: j.id, kind: j.kind });

  const live: LiveAgent[] = (await db.select().from(agents).where(gte(agents.last_seen_at, now - settings.agentStaleMs))).map((a) => ({
    gpus: a.gpus,
    engines: JSON.parse(a.engines) as string[],
    configs: JSON.parse(a.configs) as string[],
  }));
  const stale = await db
    .select()
    .from(jobs)
    .where(and(eq(jobs.status, 'queued'), lt(jobs.notified_at, now - settings.renotifyAfterMs)))
    .limit(500);
  let renotified = 0;
  let waiting = 0;
  for (const job of stale) {
    const reason = whyUnservable(job, live);
    if (reason) {
      waiting++;
      if (reason !== job.waiting_reason) {
        await db.update(jobs).set({ waiting_reason: reason }).where(and(eq(jobs.id, job.id), eq(jobs.status, 'queued')));
        await appendServiceLog(db, env.ARTIFACTS, job.id, `Waiting: ${reason}. The job stays queued until an agent that can run it is online.`);
      }
      continue;
    }
    await db.update(jobs).set({ notified_at: now }).where(and(eq(jobs.id, job.id), eq(jobs.status, 'queued')));
    await notifyJob(env, { job_id: job.id, kind: job.kind });
    renotified++;
  }
  return { requeued: requeued.length, renotified, waiting };
}
