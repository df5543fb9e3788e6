// The agent's main loop (prover-agent/src/agent/agent.ts) against a small HTTP service
// standing in for the Worker's /internal routes: how it stops.
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Agent } from '../../prover-agent/src/agent/agent.ts';
import { loadConfig } from '../../prover-agent/src/agent/config.ts';
import { createLogger } from '../../prover-agent/src/agent/log.ts';
import { Metrics } from '../../prover-agent/src/agent/metrics.ts';
import type { ClaimedJob } from '../../prover-agent/src/protocol.ts';
import { claim } from './claims.ts';

const HELLO_ELF = new URL('../guests/build/hello.elf', import.meta.url);

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

type Held = { arrived: Promise<void>; answer: (body: unknown) => void };

/** A request the stub service holds: `arrived` once it came, `answer` sends its answer. */
function heldRequest(): Held & { reply: Promise<unknown>; came: () => void } {
  let came!: () => void;
  let answer!: (body: unknown) => void;
  const arrived = new Promise<void>((resolve) => (came = resolve));
  const reply = new Promise<unknown>((resolve) => (answer = resolve));
  return { arrived, answer, reply, came };
}

/**
 * A service with no work, standing in for the Worker's /internal routes. The first claim
 * and the first pull are held until the test answers them; each request's path is
 * recorded, and each completion's body (answered by `completes`, in turn).
 */
async function stubService(completes: unknown[] = []) {
  const seen: string[] = [];
  const completed: unknown[] = [];
  const firstClaim = heldRequest();
  const firstPull = heldRequest();
  let claims = 0;
  let pulls = 0;
  const answerHeld = async (held: ReturnType<typeof heldRequest>) => {
    held.came();
    return JSON.stringify(await held.reply);
  };
  const server = createServer(async (req, res) => {
    let body = '';
    for await (const part of req) body += part;
    seen.push(req.url ?? '');
    if (req.url === '/internal/v1/agents/presence')
      return res.end(JSON.stringify({ presence_interval_ms: 60_000, queue_token: 'qt-1', queue_token_expires_at: Date.now() + 300_000 }));
    if (req.url === '/internal/v1/jobs/claim')
      return res.end(claims++ === 0 ? await answerHeld(firstClaim) : JSON.stringify({ job: null, hint: 'none' }));
    if (req.url === '/internal/v1/queue/pull')
      return res.end(pulls++ === 0 ? await answerHeld(firstPull) : JSON.stringify({ messages: [] }));
    if (req.url === '/internal/v1/agents/leave') return res.end(JSON.stringify({ left: true }));
    if (req.url === '/internal/v1/lease/complete') {
      completed.push(JSON.parse(body));
      return res.end(JSON.stringify(completes[completed.length - 1] ?? { status: 'completed' }));
    }
    if (req.url?.startsWith('/internal/v1/lease/')) return res.end(JSON.stringify({ status: 'requeued', accepted: 'appended' }));
    res.writeHead(404).end('{}');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(() => {
    firstClaim.answer({ job: null, hint: 'none' });
    firstPull.answer({ messages: [] });
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, seen, completed, firstClaim: firstClaim as Held, firstPull: firstPull as Held };
}

/** An agent of `svc` with its own work directory; a poll interval far past the test's time limit. */
async function agentOf(svc: { url: string }, ...extraArgs: string[]) {
  const workDir = await mkdtemp(join(tmpdir(), 'agent-loop-'));
  cleanups.push(() => rm(workDir, { recursive: true, force: true }));
  const args = ['--api-url', svc.url, '--agent-token', 'at_x', '--work-dir', workDir, '--poll-interval', '3600', ...extraArgs];
  const cfg = loadConfig(args, {});
  return new Agent(cfg, createLogger('error'), new Metrics());
}

describe('the agent loop', () => {
  it('stops at once on a shutdown that comes while a pull is in flight, without sleeping out its poll interval', async () => {
    const svc = await stubService();
    // Sleeping out the poll interval (an hour) after the aborted pull fails the test.
    const agent = await agentOf(svc);
    const run = agent.run();
    svc.firstClaim.answer({ job: null, hint: 'none' });
    await svc.firstPull.arrived;
    agent.shutdown();
    await run;
    expect(agent.state).toBe('stopped');
    // It claimed without a notice first (an agent starts by looking for work), then pulled, then left.
    expect(svc.seen).toEqual([
      '/internal/v1/agents/presence',
      '/internal/v1/jobs/claim',
      '/internal/v1/queue/pull',
      '/internal/v1/agents/leave',
    ]);
  });

  it('releases at once a job whose claim was answered after a second shutdown signal, without running it', async () => {
    const svc = await stubService();
    const agent = await agentOf(svc);
    const run = agent.run();
    await svc.firstClaim.arrived;
    agent.shutdown(); // drain: the claim in flight is let finish (the lease may be ours already)
    agent.shutdown(); // release everything now, the job the claim brings included
    svc.firstClaim.answer({ job: claimedJob(), hint: 'claimed' });
    await run;
    expect(agent.state).toBe('stopped');
    // Released, not run (its log's last line rides with the release); no complete or fail (the old loop ran it, and failed it).
    expect(svc.seen.filter((path) => path.startsWith('/internal/v1/lease/'))).toEqual(['/internal/v1/lease/release']);
  });

  it('runs the job a completion claimed, with no claim request of its own, offering all it has free', async () => {
    const second = executeJob('job-2');
    const svc = await stubService([
      { status: 'completed', next: second },
      { status: 'completed', next: null },
    ]);
    // Two GPUs, one job at a time: a dev job holds none, so its completion offers both.
    const agent = await agentOf(svc, '--gpus', '2', '--concurrency', '1');
    const run = agent.run();
    await svc.firstClaim.arrived;
    svc.firstClaim.answer({ job: executeJob('job-1'), hint: 'none' });
    await svc.firstPull.arrived;
    agent.shutdown();
    await run;
    expect(svc.seen).toEqual([
      '/internal/v1/agents/presence',
      '/internal/v1/jobs/claim',
      '/internal/v1/lease/complete', // job-1's, which claimed job-2
      '/internal/v1/lease/complete', // job-2's, which found nothing
      '/internal/v1/jobs/claim', // the loop's own, as after any claim that found work (agent.ts start())
      '/internal/v1/queue/pull',
      '/internal/v1/agents/leave',
    ]);
    // Each completion claimed for this agent with both GPUs (lent while it was in flight).
    const nextClaim = { agent_id: agent.id, engines: ['dev'], gpus: 2 };
    expect(svc.completed).toMatchObject([
      { kind: 'execute', next_claim: nextClaim },
      { kind: 'execute', next_claim: nextClaim },
    ]);
  });
});

/** A dev-engine commit job: released in the tests that use it, never run. */
const claimedJob = () => claim('commit', { id: 'job-1', program: { id: 'prog-1', app_exe_commit: null }, log: { seq: 0, offset: 0 } });

/** A dev-engine execution of the hello guest, its inputs inline. */
function executeJob(id: string): ClaimedJob {
  const inline = { elf: readFileSync(HELLO_ELF).toString('base64'), vmexe: '', input: Buffer.from('{"input":[]}').toString('base64') };
  return claim('execute', {
    id,
    execution: { mode: 'pure' },
    artifacts: ['elf', 'vmexe', 'input'],
    inline_artifacts: inline,
    log: { seq: 0, offset: 0 },
  });
}
