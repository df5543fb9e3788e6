// The agent's presence and queue pulls (prover-agent/src/agent/queue-client.ts) against a
// small HTTP service standing in for the Worker's /internal/v1/agents and /queue routes.
import { once } from 'node:events';
import { createServer } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { FleetQueue } from '../../prover-agent/src/agent/queue-client.ts';
import { ServiceClient } from '../../prover-agent/src/agent/service-client.ts';

let close: (() => void) | null = null;
afterEach(() => close?.());

const whoAmI = { agent_id: 'a1', name: 'box', machine_type: 'm', gpus: 0, engines: ['dev'], configs: [] };
// Quick retries; a request's own timeout only for a stuck server (a loaded host may take seconds to answer).
const fast = { attempts: 3, baseDelayMs: 1, maxDelayMs: 5, timeoutMs: 30_000 };

/** A service issuing queue tokens qt-1, qt-2, ... on each presence report; pulls refuse all but the newest. */
async function service(opts: { presenceDelayMs?: number } = {}) {
  const seen = { presence: 0, pulls: [] as string[], acks: [] as unknown[] };
  const server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const token = req.headers.authorization?.replace('Bearer ', '') ?? '';
    if (req.url === '/internal/v1/agents/presence') {
      seen.presence++;
      await new Promise((r) => setTimeout(r, opts.presenceDelayMs ?? 0));
      return res.end(
        JSON.stringify({ presence_interval_ms: 60_000, queue_token: `qt-${seen.presence}`, queue_token_expires_at: Date.now() + 300_000 }),
      );
    }
    if (req.url === '/internal/v1/queue/pull') {
      seen.pulls.push(token);
      if (token !== `qt-${seen.presence}`) return res.writeHead(401).end('{"detail":"expired"}');
      return res.end(JSON.stringify({ messages: [] }));
    }
    if (req.url === '/internal/v1/queue/ack') {
      seen.acks.push(JSON.parse(body));
      return res.end(JSON.stringify({ ack_count: 1, retry_count: 0 }));
    }
    res.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  close = () => server.close();
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return { seen, queue: new FleetQueue(new ServiceClient(url, 'at_x', fast), whoAmI, fast) };
}

describe('presence and the queue through the service', () => {
  it('reports presence once however many callers find it due at the same moment, then not again until the interval has passed', async () => {
    const { seen, queue } = await service({ presenceDelayMs: 50 });
    await Promise.all([queue.reportPresence(), queue.reportPresence(), queue.pull(5, 1000), queue.pull(5, 1000)]);
    expect(seen.presence).toBe(1);
    await queue.reportPresence();
    await queue.pull(5, 1000);
    expect(seen.presence).toBe(1); // within the minute
    expect(seen.pulls.every((t) => t === 'qt-1')).toBe(true);
  });

  it('a pull refused for its token reports presence at once and pulls again with the new token', async () => {
    const { seen, queue } = await service();
    await queue.reportPresence();
    seen.presence++; // the service has moved on: qt-1 is no longer accepted
    expect(await queue.pull(5, 1000)).toEqual([]);
    expect(seen.pulls).toEqual(['qt-1', 'qt-3']);
  });

  it('acks nothing when there is nothing to settle', async () => {
    const { seen, queue } = await service();
    await queue.ack([], []);
    expect(seen.acks).toEqual([]);
    await queue.ack(['l1'], [{ lease_id: 'l2', delay_seconds: 5 }]);
    expect(seen.acks).toEqual([{ acks: [{ lease_id: 'l1' }], retries: [{ lease_id: 'l2', delay_seconds: 5 }] }]);
  });
});
