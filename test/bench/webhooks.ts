// npm run bench:webhooks [-- --agents N --proofs M --rate R]
//
// On the local stack (wrangler dev, N dev-engine agents) with a real receiver on loopback
// (node:http, answering 200 at once), submits M proofs at R per second and measures
//   submit → proof.succeeded delivered: from the caller's POST /v1/proofs to the receiver
//     holding the signed event (the proving itself included: dev proofs take ~0.1-1 s);
//   Succeeded → delivered: from the proof's terminated_at to the receiver (the webhook path alone);
// and what the delivery path costs D1 per event:
//   - in the transition's own batch: the one read of the deliveries its triggers just made
//     (src/jobs/state.ts deliveriesOf; the trigger's inserts are part of the UPDATE that fires them);
//   - in the consumer: the statements and round trips each attempt reports in its
//     `webhook attempt` log line (d1_statements, d1_round_trips: the lengths of the batches it
//     ran, checked against a count of the D1 calls themselves in test/worker/webhooks.test.ts),
//     summed over the attempts of the events delivered;
//   - rows: D1's own tables, counted after the run (webhook_deliveries, webhook_attempts).
// Every event must arrive once, verified with the endpoint's secret, or the bench fails.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { caller, registerGuest, startStack } from '../e2e/stack.ts';
import { benchCli } from './cli.ts';

const usage = `usage: npm run bench:webhooks -- [--agents N] [--proofs N] [--rate R]
  --agents N   local dev agents (default 2)
  --proofs N   proofs submitted, each delivering proof.succeeded (default 50)
  --rate R     submissions per second (default 2; decimals allowed)`;
const cli = benchCli('bench:webhooks', usage, ['agents', 'proofs', 'rate']);
const agents = cli.number('agents', 2, 1);
const proofs = cli.number('proofs', 50, 1);
const rate = cli.number('rate', 2, 0.01, false);

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function main() {
  const arrived = new Map<string, { at: number; headers: Record<string, string>; body: string }>();
  let duplicates = 0;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const at = Date.now();
      res.writeHead(200).end('ok');
      const event = JSON.parse(body) as { type: string; data: { id: string } };
      if (event.type !== 'proof.succeeded') return;
      if (arrived.has(event.data.id)) duplicates++;
      else arrived.set(event.data.id, { at, headers: req.headers as Record<string, string>, body });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');

  console.error(`starting the Worker and ${agents} agents...`);
  const stack = await startStack();
  try {
    const api = caller(stack);
    for (let i = 0; i < agents; i++) await stack.startAgent({ name: `bench-${i}` });
    const program = await registerGuest(api, stack.devConfig, 'hello.elf');
    const endpoint = await api.json('POST', '/v1/webhooks', {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
      events: ['proof.succeeded'],
    });
    const logsBefore = stack.workerLogs().length;

    console.error(`submitting ${proofs} proofs at ${rate}/s...`);
    const submittedAt = new Map<string, number>();
    const t0 = Date.now();
    const posts: Promise<void>[] = [];
    for (let i = 0; i < proofs; i++) {
      const wait = t0 + (i * 1000) / rate - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const sent = Date.now();
      posts.push(
        api
          .json('POST', `/v1/proofs?program_id=${program}`, { input: ['0x0168656c6c6f'] })
          .then(({ id }) => void submittedAt.set(id, sent)),
      );
    }
    await Promise.all(posts);
    const deadline = Date.now() + 300_000;
    while (arrived.size < proofs && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    // The attempts' own records land just after the receiver answers.
    await new Promise((r) => setTimeout(r, 1000));

    const verifier = new Webhook(endpoint.secret);
    let unverified = 0;
    for (const a of arrived.values())
      try {
        verifier.verify(a.body, a.headers);
      } catch {
        unverified++;
      }
    const ended = new Map(
      (await stack.sql(`SELECT id, terminated_at FROM proofs WHERE program_id = '${program}'`)).map((r) => [
        r.id as string,
        Date.parse(r.terminated_at as string),
      ]),
    );
    const submitToDelivered = [...arrived].map(([id, a]) => a.at - submittedAt.get(id)!).sort((x, y) => x - y);
    const endToDelivered = [...arrived].map(([id, a]) => a.at - ended.get(id)!).sort((x, y) => x - y);

    const attempts = stack
      .workerLogs()
      .slice(logsBefore)
      .filter((l) => l.includes('"msg":"webhook attempt"'))
      .map((l) => JSON.parse(l.slice(l.indexOf('{'))) as { event: string; outcome: string; d1_statements: number; d1_round_trips: number })
      .filter((l) => l.event === 'proof.succeeded');
    const consumerStatements = attempts.reduce((n, a) => n + a.d1_statements, 0);
    const consumerTrips = attempts.reduce((n, a) => n + a.d1_round_trips, 0);
    const [rows] = await stack.sql(
      `SELECT (SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = '${endpoint.id}') AS deliveries,
              (SELECT count(*) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = '${endpoint.id}') AS attempts`,
    );
    const events = arrived.size;

    console.log(
      `bench:webhooks — ${agents} agents (dev engine), ${proofs} proofs at ${rate}/s, one endpoint (proof.succeeded) on a loopback receiver`,
    );
    console.log(
      `submit → proof.succeeded delivered   p50 ${pct(submitToDelivered, 50)} ms   p99 ${pct(submitToDelivered, 99)} ms   max ${submitToDelivered.at(-1)} ms`,
    );
    console.log(
      `Succeeded → delivered (webhook path)  p50 ${pct(endToDelivered, 50)} ms   p99 ${pct(endToDelivered, 99)} ms   max ${endToDelivered.at(-1)} ms`,
    );
    console.log(
      `D1 per event   1 statement in the transition's batch + ${(consumerStatements / events).toFixed(1)} statements in ${(consumerTrips / events).toFixed(1)} round trips in the consumer (${attempts.length} attempts logged for ${events} events)`,
    );
    console.log(`D1 rows        ${rows.deliveries} deliveries, ${rows.attempts} attempts recorded`);
    console.log(`outcome        ${events}/${proofs} delivered, ${unverified} failed verification, ${duplicates} duplicates`);
    if (events !== proofs || unverified > 0) process.exitCode = 1;
  } finally {
    await stack.stop();
    server.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
