// npm run bench:trust [-- --requests N --repeats R --only doors]
//
// What a request costs the Worker before and while it is trusted (issue 21), on the
// local stack (wrangler dev; no agents: jobs stay queued), loopback only:
//   - an unauthenticated 64 KiB JSON POST (a made-up API key) against a bare 401 (the
//     same POST with no body), p50 over N requests each: refused before its body is read,
//     the two should cost the same;
//   - workerd's memory growth (VmHWM, the process's peak RSS, reset through
//     /proc/<pid>/clear_refs before each request, minus VmRSS before it) and CPU
//     (utime+stime from /proc/<pid>/stat) for a 16 MiB binary-codec child proof against
//     a 16 MiB plain input, the median of R requests each;
//   - the same peak growth for every route with a cap-sized body (src/lib/limits.ts,
//     MAX_UPLOAD_BYTES), and the largest of them;
//   - what a hostile request costs at a door that takes no credential (issue 28 item 1):
//     workerd's CPU and peak RSS growth per request for every route with no credential that
//     takes a body (the console's sign-in, refresh, password links, invitations), sent 32 MiB
//     of nested arrays with and without a Content-Length, and for the fleet's routes that
//     check their token in their own batch (claim, presence, leave, heartbeat) sent 4 MiB of
//     nested arrays with a made-up token; the worst of them (goal: under 50 ms and 5 MB).
//     Answered with whatever status the tree gives (this part runs on older trees too:
//     --only doors); `reset` where the Worker stopped taking the body in and the client,
//     still sending, saw the connection close. On wrangler dev workerd also takes in what a
//     route with a credential leaves unread (on Cloudflare the edge does), counted here.
// The workerd measured is the one this bench's wrangler dev started (a descendant of
// this process). Stops by itself; exits 1 if any request is answered other than expected.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { caller, GUESTS, startStack, type Stack } from '../e2e/stack.ts';
import { MAX_CHILD_PROOF_BYTES, MAX_INPUT_BYTES, MAX_JSON_BODY_BYTES } from '../../src/lib/limits.ts';
import { benchCli } from './cli.ts';
import { cpuMs, procStatus, workerdPids } from './workerd.ts';

const usage = `usage: npm run bench:trust -- [--requests N] [--repeats R] [--only doors]
  --requests N   requests per side of the unauthenticated comparison (default 50)
  --repeats R    requests per memory/CPU measurement, the median reported (default 3)
  --only doors   only the hostile requests at the doors that take no credential`;
const cli = benchCli('bench:trust', usage, ['requests', 'repeats', 'only']);
const requests = cli.number('requests', 50, 1);
const repeats = cli.number('repeats', 3, 1);
const only = cli.string('only');
if (only !== undefined && only !== 'doors') cli.fail('--only must be doors');

const MiB = 1024 * 1024;
const enc = new TextEncoder();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const mb = (kb: number) => `${(kb / 1024).toFixed(1)} MB`;

/**
 * The workerd running the Worker under this bench's wrangler dev. Two workerd processes
 * descend from this one: wrangler's own proxy (a Miniflare instance of its own, passing
 * requests on) and the Worker's, which also hosts the local D1 and R2 and so holds far
 * more memory once they have been used: the larger one.
 */
function workerdPid(): { pid: number; others: number[] } {
  const found = workerdPids();
  if (found.length === 0) throw new Error('no workerd under this bench');
  found.sort((a, b) => procStatus(b, 'VmRSS') - procStatus(a, 'VmRSS'));
  return { pid: found[0], others: found.slice(1) };
}

/** One request's cost to workerd: peak RSS growth (KB) and CPU (ms). */
async function measure(pid: number, send: () => Promise<Response>, expected: number): Promise<{ kb: number; cpu: number }> {
  await new Promise((r) => setTimeout(r, 300)); // let the previous request's work settle
  writeFileSync(`/proc/${pid}/clear_refs`, '5'); // VmHWM := VmRSS
  const rss = procStatus(pid, 'VmRSS');
  const cpu = cpuMs(pid);
  const res = await send();
  const text = await res.text();
  if (res.status !== expected) throw new Error(`expected ${expected}, got ${res.status}: ${text.slice(0, 300)}`);
  console.error(`    ${res.status}`);
  return { kb: procStatus(pid, 'VmHWM') - rss, cpu: cpuMs(pid) - cpu };
}

/** One request's cost to workerd, whatever it is answered: peak RSS growth (KB), CPU (ms) and the status. */
async function measureAny(pid: number, send: () => Promise<Response>): Promise<{ kb: number; cpu: number; status: number }> {
  await new Promise((r) => setTimeout(r, 300));
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
  const rss = procStatus(pid, 'VmRSS');
  const cpu = cpuMs(pid);
  // A Worker that stops taking a body in (no credential, past the cap) closes the connection
  // on a client still sending: its answer is in its log, the client sees a reset (status 0).
  const res = await send().catch(() => null);
  await res?.text().catch(() => '');
  return { kb: procStatus(pid, 'VmHWM') - rss, cpu: cpuMs(pid) - cpu, status: res?.status ?? 0 };
}

/** A body of `size` bytes of `[`, streamed (no Content-Length: chunked) or whole. */
function nestedArrays(size: number, streamed: boolean): BodyInit {
  const chunk = new Uint8Array(64 * 1024).fill(0x5b);
  if (!streamed) return new Blob([new Uint8Array(size).fill(0x5b)]);
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= size) return controller.close();
      const n = Math.min(chunk.length, size - sent);
      sent += n;
      controller.enqueue(chunk.subarray(0, n));
    },
  });
}

interface DoorRow {
  name: string;
  cells: { label: string; kb: number; cpu: number; statuses: string }[];
}

/**
 * The doors that take no credential, and the fleet's doors that used to check their token
 * in their own batch, each sent hostile bodies: workerd's median CPU and peak RSS growth per request.
 */
async function doorRows(stack: Stack, pid: number): Promise<DoorRow[]> {
  const hostile = (path: string, headers: Record<string, string>, size: number, streamed: boolean) => () =>
    fetch(stack.url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: nestedArrays(size, streamed),
      ...(streamed ? { duplex: 'half' } : {}),
    });
  const measured = async (label: string, send: () => Promise<Response>) => {
    const runs: { kb: number; cpu: number; status: number }[] = [];
    for (let i = 0; i < repeats; i++) runs.push(await measureAny(pid, send));
    return {
      label,
      kb: median(runs.map((r) => r.kb)),
      cpu: median(runs.map((r) => r.cpu)),
      statuses: [...new Set(runs.map((r) => (r.status === 0 ? 'reset' : String(r.status))))].join('/'),
    };
  };
  const rows: DoorRow[] = [];
  const anonymous = ['signin', 'refresh', 'signout', 'set-password', 'reset-password', 'password-reset', 'invite', 'accept-invite'];
  for (const route of anonymous) {
    const path = `/console/v1/auth/${route}`;
    console.error(`  POST ${path} (hostile bodies)...`);
    const headers = { 'X-Console-CSRF': '1', origin: stack.url };
    rows.push({
      name: `POST ${path}`,
      cells: [
        await measured('32 MiB nested, with length', hostile(path, headers, 32 * MiB, false)),
        await measured('32 MiB nested, chunked', hostile(path, headers, 32 * MiB, true)),
      ],
    });
  }
  const madeUp = { authorization: `Bearer at_made_up_${'x'.repeat(40)}` };
  for (const path of [
    '/internal/v1/jobs/claim',
    '/internal/v1/agents/presence',
    '/internal/v1/agents/leave',
    '/internal/v1/lease/heartbeat',
  ]) {
    console.error(`  POST ${path} (made-up token, hostile bodies)...`);
    rows.push({
      name: `POST ${path} (made-up token)`,
      cells: [
        await measured('4 MiB nested, with length', hostile(path, madeUp, 4 * MiB, false)),
        await measured('4 MiB nested, chunked', hostile(path, madeUp, 4 * MiB, true)),
      ],
    });
  }
  return rows;
}

function printDoorRows(rows: DoorRow[]) {
  console.log('\nhostile requests with no valid credential, workerd per request (median CPU, peak RSS growth; status):');
  for (const row of rows)
    console.log(
      `  ${row.name.padEnd(52)} ${row.cells.map((c) => `${c.label}: ${c.cpu.toFixed(0).padStart(5)} ms CPU ${mb(c.kb).padStart(9)} (${c.statuses})`).join('   ')}`,
    );
  const cells = rows.flatMap((r) => r.cells.map((c) => ({ ...c, name: r.name })));
  const cpu = cells.reduce((a, b) => (b.cpu > a.cpu ? b : a));
  const rss = cells.reduce((a, b) => (b.kb > a.kb ? b : a));
  console.log(
    `worst of them: ${cpu.cpu.toFixed(0)} ms CPU (${cpu.name}, ${cpu.label}); ${mb(rss.kb)} peak RSS growth (${rss.name}, ${rss.label}) — goal: under 50 ms and 5 MB`,
  );
}

async function repeated(pid: number, send: () => Promise<Response>, expected: number) {
  const runs: { kb: number; cpu: number }[] = [];
  for (let i = 0; i < repeats; i++) runs.push(await measure(pid, send, expected));
  return { kb: median(runs.map((r) => r.kb)), cpu: median(runs.map((r) => r.cpu)) };
}

/** A VersionedVmStarkProof in the zkVM's binary codec (src/features/proofs/format.ts), exactly `size` bytes. */
function codecProof(size: number): Uint8Array {
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  const version = enc.encode('v2.0');
  let at = 0;
  const field = (n: number, fill?: Uint8Array) => {
    view.setUint32(at, n, true);
    at += 4;
    if (fill) out.set(fill, at);
    else for (let i = 0; i < n; i++) out[at + i] = (i * 131) & 0xff;
    at += n;
  };
  field(version.length, version);
  field(size - at - 4 - 4 - 2 - 1);
  field(2);
  out[at++] = 0;
  return out;
}

/** `{"input": ["0x01…"]}` of exactly `size` bytes: one bytes entry (padded with trailing blanks). */
function plainInput(size: number): Uint8Array<ArrayBuffer> {
  const head = '{"input":["0x01';
  const tail = '"]}';
  const pairs = (size - head.length - tail.length) >> 1;
  const text = head + 'ab'.repeat(pairs) + tail;
  return enc.encode(text + ' '.repeat(size - text.length));
}

/** A multipart body with a fixed boundary: [name, filename or null, bytes] parts. */
function multipart(parts: [string, string | null, Uint8Array][]): { body: Blob; type: string } {
  const boundary = 'bench-trust-boundary-7f3a';
  const pieces: (Uint8Array | string)[] = [];
  for (const [name, filename, bytes] of parts) {
    pieces.push(
      `--${boundary}\r\ncontent-disposition: form-data; name="${name}"${filename ? `; filename="${filename}"` : ''}\r\n\r\n`,
      bytes,
      '\r\n',
    );
  }
  pieces.push(`--${boundary}--\r\n`);
  return { body: new Blob(pieces as BlobPart[]), type: `multipart/form-data; boundary=${boundary}` };
}

async function main() {
  console.error('starting the Worker (wrangler dev)...');
  const stack: Stack = await startStack();
  try {
    if (only === 'doors') {
      const { pid } = workerdPid();
      const rows = await doorRows(stack, pid);
      console.log(`bench:trust --only doors (wrangler dev, loopback; the Worker's workerd: pid ${pid}; median of ${repeats} per cell)`);
      printDoorRows(rows);
      return;
    }
    const api = caller(stack);
    const post = (path: string, body: BodyInit | null, type: string | null, key = stack.apiKey, method = 'POST') =>
      fetch(stack.url + path, { method, body, headers: { 'Service-API-Key': key, ...(type ? { 'content-type': type } : {}) } });

    // A program, registered and marked ready as its commit job would (no agents here).
    const elf = new Uint8Array(readFileSync(join(GUESTS, 'hello.elf')));
    const reg = multipart([
      ['elf', 'hello.elf', elf],
      ['vmexe', 'hello.vmexe', enc.encode('vmexe')],
    ]);
    const { id: program } = (await (await post(`/v1/programs?config_id=${stack.devConfig}`, reg.body, reg.type)).json()) as { id: string };
    await stack.sql(
      `UPDATE programs SET status = 'ready', app_exe_commit = '0x${'cd'.repeat(32)}', baseline_key = 'programs/${program}/baseline.json' WHERE id = '${program}'`,
    );
    const webhook = await api.json<{ id: string }>('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['proof.succeeded'] });
    const { pid, others } = workerdPid();

    // 1. Unauthenticated: a 64 KiB JSON POST against a bare 401.
    const madeUp = 'sk_made_up_' + 'x'.repeat(40);
    const json64k = enc.encode(JSON.stringify({ name: 'x'.repeat(MAX_JSON_BODY_BYTES - 20) }));
    const timed = async (send: () => Promise<Response>) => {
      const ms: number[] = [];
      for (let i = 0; i < requests; i++) {
        const t0 = performance.now();
        const res = await send();
        const text = await res.text();
        if (res.status !== 401)
          throw new Error(
            `expected 401, got ${res.status} (request ${i}): ${text.slice(0, 500)}\n${stack.workerLogs().slice(-15).join('\n')}`,
          );
        ms.push(performance.now() - t0);
      }
      return ms;
    };
    console.error('  unauthenticated requests...');
    const bare = await timed(() => post('/v1/projects', null, null, madeUp));
    const withBody = await timed(() => post('/v1/projects', json64k, 'application/json', madeUp));
    const dashes = '-'.repeat(4000);
    const dashBody = enc.encode(
      `--${dashes}Z\r\ncontent-disposition: form-data; name="elf"\r\n\r\n${'-'.repeat(2 * MiB)}\r\n--${dashes}Z--\r\n`,
    );
    const dashed = await timed(() =>
      fetch(stack.url + `/v1/programs?config_id=${stack.devConfig}`, {
        method: 'POST',
        body: dashBody,
        headers: {
          'Service-API-Key': madeUp,
          'content-type': `multipart/form-data; boundary=${dashes}Z`,
          'Idempotency-Key': crypto.randomUUID(),
        },
      }),
    );

    // 2. A 16 MiB binary child proof against a 16 MiB plain input.
    const input = JSON.stringify({ input: ['0x0101'] });
    const child = multipart([
      ['input', null, enc.encode(input)],
      ['child_proofs', 'child.bin', codecProof(MAX_CHILD_PROOF_BYTES)],
    ]);
    const childCost = await repeated(pid, () => post(`/v1/proofs?program_id=${program}`, child.body, child.type), 200);
    const plain = plainInput(16 * MiB);
    const plainCost = await repeated(pid, () => post(`/v1/proofs?program_id=${program}`, plain, 'application/json'), 200);

    // 3. Every route with a cap-sized body.
    const capInput = plainInput(MAX_INPUT_BYTES);
    const starkJson = (bytes: number) =>
      enc.encode(`{"version":"v2.0","proof":"${'ab'.repeat((bytes - 90) >> 1)}","user_pvs_proof":"00","deferral_merkle_proofs":null}`);
    const children = Math.floor((100 * MiB - MAX_INPUT_BYTES - 64 * 1024) / MAX_CHILD_PROOF_BYTES);
    const proofForm = multipart([
      ['input', null, capInput],
      ...Array.from({ length: children }, (): [string, string, Uint8Array] => ['child_proofs', 'c.bin', codecProof(MAX_CHILD_PROOF_BYTES)]),
    ]);
    const verifyForm = multipart([['proof', 'proof.json', starkJson(MAX_CHILD_PROOF_BYTES)]]);
    const programForm = multipart([
      ['elf', 'hello.elf', elf],
      ['vmexe', 'big.vmexe', new Uint8Array(100 * MiB - elf.length - 1024).fill(7)],
    ]);
    const small = (field: string) => enc.encode(JSON.stringify({ [field]: 'x'.repeat(MAX_JSON_BODY_BYTES - 40) }));
    const routes: [string, () => Promise<Response>, number][] = [
      [
        'POST /v1/projects (64 KiB JSON)',
        () => post('/v1/projects', enc.encode(JSON.stringify('p' + ' '.repeat(MAX_JSON_BODY_BYTES - 8))), 'application/json'),
        422,
      ],
      ['POST /v1/webhooks (64 KiB JSON)', () => post('/v1/webhooks', small('description'), 'application/json'), 422],
      [
        'PATCH /v1/webhooks/{id} (64 KiB JSON)',
        () => post(`/v1/webhooks/${webhook.id}`, small('description'), 'application/json', stack.apiKey, 'PATCH'),
        422,
      ],
      [
        'PUT /v1/programs/{id} (64 KiB JSON)',
        () => post(`/v1/programs/${program}`, small('name'), 'application/json', stack.apiKey, 'PUT'),
        422,
      ],
      [
        `POST /v1/proofs (${MAX_INPUT_BYTES / MiB} MiB JSON input)`,
        () => post(`/v1/proofs?program_id=${program}`, capInput, 'application/json'),
        200,
      ],
      [
        `POST /v1/executions (${MAX_INPUT_BYTES / MiB} MiB JSON input)`,
        () => post(`/v1/executions?program_id=${program}`, capInput, 'application/json'),
        200,
      ],
      [
        `POST /v1/proofs (multipart: ${MAX_INPUT_BYTES / MiB} MiB input + ${children} × 16 MiB codec children)`,
        () => post(`/v1/proofs?program_id=${program}`, proofForm.body, proofForm.type),
        200,
      ],
      [
        'POST /v1/verify/stark (16 MiB proof JSON)',
        () => post(`/v1/verify/stark?program_id=${program}`, verifyForm.body, verifyForm.type),
        200,
      ],
      ['POST /v1/verify (16 MiB proof JSON)', () => post(`/v1/verify?program_id=${program}`, verifyForm.body, verifyForm.type), 200],
      [
        'POST /v1/programs (100 MiB: ELF + VMEXE)',
        () => post(`/v1/programs?config_id=${stack.devConfig}`, programForm.body, programForm.type),
        201,
      ],
    ];
    const caps: [string, { kb: number; cpu: number }][] = [];
    for (const [name, send, expected] of routes) {
      console.error(`  ${name}...`);
      caps.push([name, await measure(pid, send, expected)]);
    }

    console.log(
      `bench:trust (wrangler dev, loopback; the Worker's workerd: pid ${pid}, ${mb(procStatus(pid, 'VmRSS'))} RSS at the end${others.length ? `; wrangler's proxy workerd: ${others.join(', ')}` : ''}; ${requests} requests per side, median of ${repeats} for memory/CPU)`,
    );
    console.log('\nunauthenticated (made-up API key), wall time per request:');
    console.log(`  bare 401 (POST, no body)                        p50 ${pct(bare, 50).toFixed(1)} ms  p99 ${pct(bare, 99).toFixed(1)} ms`);
    console.log(
      `  64 KiB JSON POST /v1/projects                   p50 ${pct(withBody, 50).toFixed(1)} ms  p99 ${pct(withBody, 99).toFixed(1)} ms`,
    );
    console.log(
      `  2 MiB multipart, 4,000-dash boundary, Idem-Key  p50 ${pct(dashed, 50).toFixed(1)} ms  p99 ${pct(dashed, 99).toFixed(1)} ms`,
    );
    console.log('\nworkerd per request (peak RSS growth, CPU):');
    console.log(
      `  16 MiB binary child proof (POST /v1/proofs)     ${mb(childCost.kb).padStart(9)}  ${childCost.cpu.toFixed(0).padStart(5)} ms CPU`,
    );
    console.log(
      `  16 MiB plain input (POST /v1/proofs)            ${mb(plainCost.kb).padStart(9)}  ${plainCost.cpu.toFixed(0).padStart(5)} ms CPU`,
    );
    console.log('\ncap-sized bodies, one request each:');
    for (const [name, r] of caps) console.log(`  ${name.padEnd(72)} ${mb(r.kb).padStart(9)}  ${r.cpu.toFixed(0).padStart(5)} ms CPU`);
    const worst = caps.reduce((a, b) => (b[1].kb > a[1].kb ? b : a));
    console.log(`\nlargest RSS growth over every route with a cap-sized body: ${mb(worst[1].kb)} (${worst[0]})`);
    printDoorRows(await doorRows(stack, pid));
  } finally {
    await stack.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : String(err));
  process.exit(1);
});
