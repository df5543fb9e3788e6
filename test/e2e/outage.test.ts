// The service goes away for a while: the agent backs off (with jitter), keeps its
// queue notices, and carries on when the service is back.
import { once } from 'node:events';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caller, freePort, registerGuest, startStack, type Stack } from './stack.ts';

/** A TCP proxy to the Worker that can be taken down and brought back on the same port. */
class Proxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  readonly port: number;
  private readonly target: number;
  constructor(port: number, target: number) {
    this.port = port;
    this.target = target;
  }
  async up() {
    this.server = createServer((client) => {
      const upstream = createConnection(this.target, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    this.server.listen(this.port, '127.0.0.1');
    await once(this.server, 'listening');
  }
  async down() {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server!.close(r));
  }
}

let stack: Stack;
let api: ReturnType<typeof caller>;
let proxy: Proxy;

beforeAll(async () => {
  stack = await startStack();
  api = caller(stack);
  proxy = new Proxy(await freePort(), Number(new URL(stack.url).port));
  await proxy.up();
});
afterAll(async () => stack?.stop());

describe('service outage', () => {
  it('the agent backs off while the service is unreachable and recovers when it returns', async () => {
    const via = `http://127.0.0.1:${proxy.port}`;
    const agent = await stack.startAgent({ name: 'patient', extraArgs: ['--api-url', via] });
    const program = await registerGuest(api, stack.devConfig, 'hello.elf');
    await proxy.down();
    const { id } = await api.json('POST', `/v1/proofs?program_id=${program}`, { input: ['0x0101'] });
    await agent.waitForLog(/unavailable; backing off/);
    await new Promise((r) => setTimeout(r, 2000));
    expect((await api.json('GET', `/v1/proofs/${id}`)).state).toBe('Queued');
    await proxy.up();
    const proof = await api.waitFor(`/v1/proofs/${id}`, (p: any) => ['Succeeded', 'Failed'].includes(p.state), 60_000);
    expect(proof.state).toBe('Succeeded');
    const retries = agent
      .logs()
      .filter((l) => l.includes('backing off'))
      .map((l) => JSON.parse(l) as { delay_ms: number; attempt: number });
    expect(retries.length).toBeGreaterThan(1);
    for (const r of retries) expect(r.delay_ms).toBeLessThanOrEqual(Math.min(15_000, 250 * 2 ** r.attempt));
    const metrics = await (await fetch(`http://127.0.0.1:${agent.metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/prover_agent_http_retries_total\{target="(queue|service)"\} [1-9]/);
  });
});
