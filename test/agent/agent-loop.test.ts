// The agent's main loop (prover-agent/src/agent/agent.ts) against a small HTTP service
// standing in for the Worker's /internal routes: how it stops.
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Agent } from '../../prover-agent/src/agent/agent.ts';
import { loadConfig } from '../../prover-agent/src/agent/config.ts';
import { createLogger } from '../../prover-agent/src/agent/log.ts';
import { Metrics } from '../../prover-agent/src/agent/metrics.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

/** A service with no work. Pulls are held until `answerPulls()`; each request's path is recorded. */
async function idleService() {
  const seen: string[] = [];
  const held: (() => void)[] = [];
  let pullArrived: () => void = () => {};
  const firstPull = new Promise<void>((resolve) => (pullArrived = resolve));
  const server = createServer(async (req, res) => {
    for await (const _ of req);
    seen.push(req.url ?? '');
    if (req.url === '/internal/v1/agents/presence')
      return res.end(JSON.stringify({ presence_interval_ms: 60_000, queue_token: 'qt-1', queue_token_expires_at: Date.now() + 300_000 }));
    if (req.url === '/internal/v1/jobs/claim') return res.end(JSON.stringify({ job: null, hint: 'none' }));
    if (req.url === '/internal/v1/queue/pull') {
      pullArrived();
      await new Promise<void>((resolve) => held.push(resolve));
      return res.end(JSON.stringify({ messages: [] }));
    }
    if (req.url === '/internal/v1/agents/leave') return res.end(JSON.stringify({ left: true }));
    res.writeHead(404).end('{}');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(() => {
    for (const answer of held.splice(0)) answer();
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, seen, firstPull };
}

describe('the agent loop', () => {
  it('stops at once on a shutdown that comes while a pull is in flight, without sleeping out its poll interval', async () => {
    const svc = await idleService();
    const workDir = await mkdtemp(join(tmpdir(), 'agent-loop-'));
    cleanups.push(() => rm(workDir, { recursive: true, force: true }));
    // A poll interval far past the test's time limit: sleeping it out after the aborted pull fails the test.
    const cfg = loadConfig(['--api-url', svc.url, '--agent-token', 'at_x', '--work-dir', workDir, '--poll-interval', '3600'], {});
    const agent = new Agent(cfg, createLogger('error'), new Metrics());
    const run = agent.run();
    await svc.firstPull;
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
});
