// npm run bench:results [-- --mib N --repeats R]
//
// What a large result upload costs the Worker (PUT /internal/v1/lease/results/{name},
// src/jobs/results.ts: streamed to an object of its own, its SHA-256 computed on the way),
// on the local stack (wrangler dev; loopback): for R uploads of N MiB (default 1024, the
// largest result: MAX_RESULT_BYTES), the wall time, workerd's CPU (utime+stime from
// /proc/<pid>/stat) and its peak memory growth (VmHWM after /proc/<pid>/clear_refs, minus
// VmRSS before), the median of each. The workerd measured is the Worker's (the larger of
// the two under this bench's wrangler dev: it also hosts the local R2, whose own work on
// the bytes counts here too). Each upload is by the lease of a fresh claim of a proof job.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GUESTS, startStack } from '../e2e/stack.ts';
import { benchCli } from './cli.ts';
import { cpuMs, procStatus, workerdPids } from './workerd.ts';

const usage = `usage: npm run bench:results -- [--mib N] [--repeats R]
  --mib N       size of each upload, MiB (default 1024)
  --repeats R   uploads measured, the median reported (default 3)`;
const cli = benchCli('bench:results', usage, ['mib', 'repeats']);
const mib = cli.number('mib', 1024, 1);
const repeats = cli.number('repeats', 3, 1);

const MiB = 1024 * 1024;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** A body of `size` bytes, made a MiB at a time as it is read (never held whole here either). */
function body(size: number): ReadableStream<Uint8Array> {
  const block = new Uint8Array(MiB).map((_, i) => 0x30 + (i % 10));
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent >= size) return controller.close();
      const n = Math.min(MiB, size - sent);
      controller.enqueue(n === MiB ? block : block.subarray(0, n));
      sent += n;
    },
  });
}

async function main() {
  console.error('starting the Worker (wrangler dev)...');
  const stack = await startStack();
  try {
    const post = (path: string, init: RequestInit & { headers?: Record<string, string> }) => fetch(stack.url + path, init);
    // A program marked ready as its commit job would (no agents here); a proof job to claim per upload.
    const form = new FormData();
    form.append('elf', new Blob([readFileSync(join(GUESTS, 'hello.elf'))]), 'hello.elf');
    form.append('vmexe', new Blob(['vmexe']), 'hello.vmexe');
    const reg = await post(`/v1/programs?config_id=${stack.devConfig}`, {
      method: 'POST',
      body: form,
      headers: { 'Service-API-Key': stack.apiKey },
    });
    const { id: program } = (await reg.json()) as { id: string };
    await stack.sql(`UPDATE programs SET status = 'ready', app_exe_commit = '0x${'cd'.repeat(32)}' WHERE id = '${program}'`);
    await stack.sql(`UPDATE jobs SET status = 'done' WHERE status = 'queued'`);
    const agent = { authorization: `Bearer ${stack.agentToken}`, 'content-type': 'application/json' };
    const caps = { agent_id: 'bench-agent', name: 'bench', machine_type: 'bench', gpus: 0, engines: ['dev'], configs: [] };
    await post('/internal/v1/agents/presence', { method: 'POST', body: JSON.stringify(caps), headers: agent });
    // The Worker's workerd: the larger one (it hosts the local D1 and R2 too).
    const pid = workerdPids().sort((a, b) => procStatus(b, 'VmRSS') - procStatus(a, 'VmRSS'))[0];
    const runs: { ms: number; cpu: number; kb: number }[] = [];
    for (let i = 0; i < repeats; i++) {
      await post(`/v1/proofs?program_id=${program}`, {
        method: 'POST',
        body: '{"input": ["0x01"]}',
        headers: { 'Service-API-Key': stack.apiKey, 'content-type': 'application/json' },
      });
      const claimed = (await (
        await post('/internal/v1/jobs/claim', { method: 'POST', body: JSON.stringify(caps), headers: agent })
      ).json()) as {
        job: { job_token: string } | null;
      };
      if (!claimed.job) throw new Error('nothing to claim');
      await new Promise((r) => setTimeout(r, 500));
      writeFileSync(`/proc/${pid}/clear_refs`, '5');
      const rss = procStatus(pid, 'VmRSS');
      const cpu = cpuMs(pid);
      // The lease is kept alive as an agent keeps it while it uploads (a lease that lapses mid-upload stores nothing: 409).
      const lease = { authorization: `Bearer ${claimed.job.job_token}`, 'content-type': 'application/json' };
      const beat = setInterval(() => void post('/internal/v1/lease/heartbeat', { method: 'POST', body: '{}', headers: lease }), 4000);
      const t0 = performance.now();
      const res = await fetch(`${stack.url}/internal/v1/lease/results/stark`, {
        method: 'PUT',
        body: body(mib * MiB),
        duplex: 'half',
        headers: {
          authorization: `Bearer ${claimed.job.job_token}`,
          'content-length': String(mib * MiB),
          'content-type': 'application/json',
        },
      } as RequestInit);
      const text = await res.text();
      clearInterval(beat);
      if (res.status !== 200) throw new Error(`upload answered ${res.status}: ${text.slice(0, 300)}`);
      runs.push({ ms: performance.now() - t0, cpu: cpuMs(pid) - cpu, kb: procStatus(pid, 'VmHWM') - rss });
      console.error(`  upload ${i + 1}: ${text}`);
      // The job is done with (its object is garbage the sweep takes).
      await post('/internal/v1/lease/release', {
        method: 'POST',
        body: '{}',
        headers: { authorization: `Bearer ${claimed.job.job_token}`, 'content-type': 'application/json' },
      });
      await stack.sql(`UPDATE jobs SET status = 'done' WHERE status = 'queued'`);
    }
    const m = (k: 'ms' | 'cpu' | 'kb') => median(runs.map((r) => r[k]));
    console.log(`bench:results: PUT /internal/v1/lease/results/stark of ${mib} MiB, median of ${repeats}`);
    console.log(`  wall          ${Math.round(m('ms'))} ms (${((mib / m('ms')) * 1000).toFixed(0)} MiB/s)`);
    console.log(`  workerd CPU   ${Math.round(m('cpu'))} ms`);
    console.log(`  workerd peak  +${(m('kb') / 1024).toFixed(1)} MB`);
  } finally {
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
