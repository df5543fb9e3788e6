// npm run bench:agent [-- --print-mib 300 --cancels 5]   (--help: usage)
//
// What a hostile guest costs the agent host, on the local stack (wrangler dev + a real
// prover-agent, the dev engine, the service's default timings):
//   output bomb     a proof of a guest that prints --print-mib MiB without a newline
//                   (test/engine/dev/helpers.ts printBombElf): the agent main process's
//                   peak resident set during the job above its resident set before it
//                   (/proc/<pid>/status VmHWM, reset first through clear_refs; VmRSS), the
//                   job's end, its log's size and last line
//   cancel          a proof of a guest whose every instruction takes milliseconds of the
//                   host's time (slowHintElf: 16 MiB of random hint each): time from the
//                   cancel's answer to the engine's process group being gone, and the
//                   proof's end state
//   time limit      the same guest, never canceled, on an agent started with
//                   --job-time-limit 5: time from the claim to the proof's end, its state
//                   and error
// Numbers only: nothing here passes or fails on a timing (the goals: under 50 MB
// for a 300 MiB bomb, under 2 s from cancel to exit).
import { readFileSync, writeFileSync } from 'node:fs';
import { printBombElf, slowHintElf } from '../engine/dev/helpers.ts';
import { caller, liveProcessGroups, registerElf, startStack, until, type AgentProcess, type Stack } from '../e2e/stack.ts';
import { benchCli } from './cli.ts';

const usage = `usage: npm run bench:agent -- [--print-mib N] [--cancels N] [--limit-seconds N]
  --print-mib N       MiB the output bomb prints without a newline (default 300)
  --cancels N         cancels of a slow-instruction guest measured (default 5)
  --limit-seconds N   the agent's --job-time-limit for the time-limit row (default 5; 0 skips it)`;
const cli = benchCli('bench:agent', usage, ['print-mib', 'cancels', 'limit-seconds']);
const printMib = cli.number('print-mib', 300, 1);
const cancels = cli.number('cancels', 5, 1);
const limitSeconds = cli.number('limit-seconds', 5, 0);

const PRINT_CHUNK = 1 << 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const MB = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
const TERMINAL = ['Succeeded', 'Failed', 'Canceled'];

/** A field of /proc/<pid>/status, in bytes. */
function procStatus(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(m[1]) * 1024;
}

async function jobOf(stack: Stack, proofId: string): Promise<string> {
  return until(
    'the job',
    async () => (await stack.sql(`SELECT id FROM jobs WHERE subject_id = '${proofId}'`))[0]?.id as string | undefined,
  );
}

async function main() {
  console.error('starting the Worker...');
  const stack = await startStack();
  const api = caller(stack);
  const agents: AgentProcess[] = [];
  const agent = async (name: string, extraArgs: string[] = []) => {
    const a = await stack.startAgent({ name, extraArgs: ['--poll-interval', '1', ...extraArgs] });
    agents.push(a);
    return a;
  };
  const waitEnd = (id: string, timeoutMs = 600_000) =>
    until(
      `proof ${id} to end`,
      async () => {
        const p = await api.json('GET', `/v1/proofs/${id}`);
        return TERMINAL.includes(p.state) && p;
      },
      timeoutMs,
      200,
    );
  try {
    const host = await agent('bench-agent');
    const bomb = await registerElf(
      api,
      stack.devConfig,
      'bomb.elf',
      printBombElf(Math.round((printMib * 2 ** 20) / PRINT_CHUNK), PRINT_CHUNK),
    );
    const slow = await registerElf(api, stack.devConfig, 'slow.elf', slowHintElf());

    // --- output bomb
    const pid = host.proc.pid!;
    await sleep(1000); // settled after the registrations' commit jobs
    const rssBefore = procStatus(pid, 'VmRSS');
    let hwmReset = true;
    try {
      writeFileSync(`/proc/${pid}/clear_refs`, '5'); // VmHWM := VmRSS
    } catch {
      hwmReset = false;
    }
    console.error(`output bomb: ${printMib} MiB printed without a newline...`);
    const started = Date.now();
    const { id: bombProof } = await api.json('POST', `/v1/proofs?program_id=${bomb}`, { input: [] });
    const bombEnd = await waitEnd(bombProof, 3_600_000);
    const bombSeconds = (Date.now() - started) / 1000;
    const growth = procStatus(pid, 'VmHWM') - rssBefore;
    const logRes = await api.call('GET', `/v1/proofs/${bombProof}/logs`);
    const log = await logRes.text();
    const lastLine = log.trimEnd().split('\n').at(-1) ?? '';

    // --- cancel → engine gone
    const stops: number[] = [];
    const ends: string[] = [];
    for (let i = 0; i < cancels; i++) {
      const { id } = await api.json('POST', `/v1/proofs?program_id=${slow}`, { input: [] });
      const jobId = await jobOf(stack, id);
      await until('the engine', async () => liveProcessGroups(host.enginePids(jobId)).length > 0);
      await sleep(500 + Math.random() * 4000); // anywhere in the heartbeat cycle
      const answer = await api.json('POST', `/v1/proofs/${id}/cancel`, {});
      const answeredAt = Date.now();
      if (answer.state !== 'Canceling') throw new Error(`cancel answered ${JSON.stringify(answer)}`);
      await until('the engine to stop', async () => liveProcessGroups(host.enginePids(jobId)).length === 0, 120_000, 10);
      stops.push(Date.now() - answeredAt);
      ends.push((await waitEnd(id)).state);
      console.error(`  cancel → engine gone ${i + 1}/${cancels}: ${stops.at(-1)} ms`);
    }

    // --- time limit
    let limitRow = '';
    if (limitSeconds > 0) {
      host.signal('SIGKILL');
      await host.exited;
      const limited = await agent('bench-limited', ['--job-time-limit', String(limitSeconds)]);
      const { id } = await api.json('POST', `/v1/proofs?program_id=${slow}`, { input: [] });
      const jobId = await jobOf(stack, id);
      const claimedAt = Number(
        await until('the claim', async () => (await stack.sql(`SELECT claimed_at FROM leases WHERE job_id = '${jobId}'`))[0]?.claimed_at),
      );
      const end = await waitEnd(id, 120_000);
      const gone = liveProcessGroups(limited.enginePids(jobId)).length === 0;
      limitRow = `time limit (--job-time-limit ${limitSeconds})   proof ${end.state} ${((Date.now() - claimedAt) / 1000).toFixed(1)} s after its claim (engine ${gone ? 'gone' : 'STILL RUNNING'}): ${end.error_message ?? end.error ?? ''}`;
    }

    console.log(`bench:agent — local stack, dev engine, one agent, default timings (cancel checks every 1 s)`);
    console.log(
      `output bomb (${printMib} MiB, no newline)   agent main process peak RSS +${MB(growth)} over ${MB(rssBefore)}${hwmReset ? '' : ' (VmHWM not reset: since start)'}; proof ${bombEnd.state} in ${bombSeconds.toFixed(1)} s; log ${log.length} bytes (${logRes.headers.get('x-log-truncated') === 'true' ? 'truncated' : 'whole'}), last line: ${lastLine.slice(0, 160)}`,
    );
    console.log(
      `cancel answer → engine gone   p50 ${pct(stops, 50)} ms   max ${Math.max(...stops)} ms   (${cancels} cancels of a slow-instruction guest; ended ${[...new Set(ends)].join(', ')})`,
    );
    if (limitRow) console.log(limitRow);
  } finally {
    for (const a of agents) if (a.proc.exitCode === null) a.signal('SIGKILL');
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
