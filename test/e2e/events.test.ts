// Callers who never poll (issue 15 items 3 and 4), on the real stack: a proof's event
// stream followed over HTTP with fetch's streaming body, through wrangler dev, while a
// real agent proves it; and a submission retried with its Idempotency-Key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SseReader, type SseEvent } from '../sse.ts';
import { caller, registerGuest, startStack, type AgentProcess, type Stack } from './stack.ts';

let stack: Stack;
let api: ReturnType<typeof caller>;

beforeAll(async () => {
  stack = await startStack();
  api = caller(stack);
});
afterAll(async () => stack?.stop());

const PROOF_ORDER = ['Queued', 'Executing', 'Executed', 'AppProving', 'AppProvingDone', 'PostProcessing', 'Succeeded'];

async function stopAgent(agent: AgentProcess) {
  agent.signal('SIGTERM');
  await agent.exited;
}

describe('a proof’s event stream on the real stack', () => {
  it('follows a proof from Queued to Succeeded as it happens, with its logs, then ends', async () => {
    const registrar = await stack.startAgent({ name: 'registrar' });
    const program = await registerGuest(api, stack.devConfig, 'hello.elf');
    await stopAgent(registrar); // no agent: the proof waits, Queued, until the stream is open

    const { id } = await api.json('POST', `/v1/proofs?program_id=${program}`, {
      input: ['0x01' + Buffer.from('streamed').toString('hex')],
    });
    const res = await fetch(`${stack.url}/v1/proofs/${id}/events`, {
      headers: { 'Service-API-Key': stack.apiKey, accept: 'text/event-stream' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const sse = new SseReader(res.body!);

    // The first event arrives while the stream stays open: nothing buffers it.
    const first = (await sse.next())!;
    expect(first.event).toBe('state');
    expect(JSON.parse(first.data)).toMatchObject({ id, state: 'Queued' });

    await stack.startAgent({ name: 'prover' });
    const events: SseEvent[] = [first];
    for (let e = await sse.next(); e; e = await sse.next()) events.push(e);

    const states = events.filter((e) => e.event === 'state').map((e) => JSON.parse(e.data));
    expect(states.length).toBeGreaterThan(1);
    const order = states.map((s) => PROOF_ORDER.indexOf(s.state));
    expect(order.every((o) => o >= 0)).toBe(true);
    expect(order).toEqual([...order].sort((a, b) => a - b)); // never backwards
    const last = states.at(-1);
    expect(last.state).toBe('Succeeded');
    expect(last).toEqual(await api.json('GET', `/v1/proofs/${id}`)); // the record exactly as GET returns it

    // The log, in pieces, is the whole log; every event has an id whose offset never goes back.
    const logs = events
      .filter((e) => e.event === 'log')
      .map((e) => e.data)
      .join('');
    expect(logs).toBe(await (await api.call('GET', `/v1/proofs/${id}/logs`)).text());
    expect(logs).toContain(`attempt 1 of proof ${id}`);
    const offsets = events.map((e) => Number(/^(\d+)\.[0-9a-f]{16}$/.exec(e.id ?? '')?.[1] ?? NaN));
    expect(offsets.every(Number.isFinite)).toBe(true);
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
    expect(offsets.at(-1)).toBe(new TextEncoder().encode(logs).length);

    // Reconnecting with the last id after the end: 204, the end for an EventSource too.
    const again = await fetch(`${stack.url}/v1/proofs/${id}/events`, {
      headers: { 'Service-API-Key': stack.apiKey, 'Last-Event-ID': sse.lastEventId },
    });
    expect(again.status).toBe(204);
  });

  it('a submission retried with its Idempotency-Key over HTTP gets the first answer and proves once', async () => {
    const program = await registerGuest(api, stack.devConfig, 'hello.elf');
    const submit = () =>
      fetch(`${stack.url}/v1/proofs?program_id=${program}`, {
        method: 'POST',
        headers: { 'Service-API-Key': stack.apiKey, 'content-type': 'application/json', 'Idempotency-Key': 'e2e-retry-1' },
        body: JSON.stringify({ input: ['0x0100'] }),
      });
    const first = await submit();
    const { id } = (await first.json()) as { id: string };
    const retry = await submit();
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(await retry.json()).toEqual({ id });
    await api.waitFor(`/v1/proofs/${id}`, (p: { state: string }) => p.state === 'Succeeded');
    const page = await api.json('GET', `/v1/proofs?program_id=${program}`);
    expect(page.pagination.total).toBe(1);
  });
});
