// npm run bench:dispatch [-- --agents N --jobs M --rate R --baseline REV --only WHICH]   (--help: usage)
//
// Runs twice, side by side: "today" (the baseline commit, extracted into a temporary
// directory and measured by its own copy of this bench, told to measure its own tree
// only: its own default baseline never comes into it) and "now" (the working tree).
// --rounds N alternates the two trees N times and prints every round's column.
// With N local prover-agents (dev engine) and instant jobs, measures
//   submit → claimed: from the caller's POST /v1/proofs to the claim of its job (D1 leases.claimed_at)
//   end to end: jobs per second from the first submission to the last Succeeded
// and checks that no job is lost (every one reaches Succeeded, exactly one completed lease each).
// From the agents' logs it also prints where an agent's time per job goes: claim
// requests (per job; a job its predecessor's completion claimed has none of its own),
// then the job's steps (artifact downloads, the engine, log flushes, result upload, the
// complete callback), and how busy the agents were.
// Jobs are submitted at a steady rate; the stack is a throwaway wrangler dev state.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { caller, registerGuest, startStack, type AgentProcess } from '../e2e/stack.ts';
import { describeWorkingTree, extractCommit, markExtracted, resolveCommit } from './geo/source.ts';
import { ROOT } from '../../src/tools/wrangler.ts';
import { benchCli } from './cli.ts';
import { startCpuProfile, summarizeProfile } from './cpu-profile.ts';
import { cpuMs, reapedChildrenCpuMs, workerdPids } from './workerd.ts';
import { writeFile } from 'node:fs/promises';
import { freePort } from '../../src/tools/wrangler.ts';

/** The commit before the fleet's scoped tokens, sealing and quotas (issue 30's "before the last round"): what "today" means by default. */
const DEFAULT_BASELINE = 'a29c62b3d6852176fdb43746fa96e4970420ef4c';

const usage = `usage: npm run bench:dispatch -- [--agents N] [--jobs M] [--rate R] [--baseline REV] [--only current|baseline] [--rounds N]
  --agents N   local prover-agents (dev engine) serving the jobs (default 4)
  --jobs M     instant proof jobs submitted (default 300)
  --rate R     submissions per second (default 50, past what 4 agents can serve; decimals allowed)
  --baseline REVS the "today" commit run beside the working tree, or several, comma-separated
                  (default ${DEFAULT_BASELINE.slice(0, 7)}; any commit with this bench)
  --only WHICH    current or baseline: run one tree only
  --rounds N      alternate baseline and working tree N times (default 1), one column per run
  --profile FILE  the working tree's Worker CPU profile, from the first submission to the last job's end, written to FILE
                  (a .cpuprofile devtools open) and summed up by file and function`;

const cli = benchCli('bench:dispatch', usage, ['agents', 'jobs', 'rate', 'baseline', 'only', 'rounds', 'profile']);
const agents = cli.number('agents', 4, 1);
const jobs = cli.number('jobs', 300, 1);
const rate = cli.number('rate', 50, 0.01, false);
const only = cli.string('only');
if (only !== undefined && only !== 'current' && only !== 'baseline') cli.fail('--only must be current or baseline');
const baselineRevs = (cli.string('baseline') ?? DEFAULT_BASELINE).split(',').filter(Boolean);
const rounds = cli.number('rounds', 1, 1);
const profileFile = cli.string('profile');

/** What one tree's run printed, and its headline figures for the side-by-side table. */
interface TreeRun {
  title: string;
  lines: string[];
  figures: {
    claimedP50: string;
    claimedP99: string;
    jobsPerSecond: string;
    outcome: string;
    perJob: string;
    claim: string;
    report: string;
    busy: string;
    workerdCpu: string;
    workerdWholeRun: string;
    agentsWholeRun: string;
    agentCpu: string;
  };
  failed: boolean;
}

/** The headline figures out of the lines a run printed (the baseline's bench prints the same first lines). */
function figuresOf(lines: string[]): TreeRun['figures'] {
  const find = (re: RegExp) => lines.map((l) => re.exec(l)).find((m) => m)?.[1] ?? '—';
  return {
    claimedP50: find(/^submit → claimed\s+p50 (\d+ ms)/),
    claimedP99: find(/^submit → claimed.*p99 (\d+ ms)/),
    jobsPerSecond: find(/^end to end\s+([\d.]+ jobs\/s)/),
    outcome: find(/^outcome\s+(.*)$/),
    perJob: find(/^agent time per job mean (\d+ ms)/),
    claim: find(/^agent time per job mean .*: claim (\d+)/).replace(/^\d+$/, '$& ms'),
    report: find(/^agent time per job mean .*[(,] report (\d+)/).replace(/^\d+$/, '$& ms'),
    busy: find(/^agents busy\s+(\d+%)/),
    workerdCpu: find(/^CPU per job\s+workerd ([\d.]+ ms)/),
    agentCpu: find(/^CPU per job.*agents ([\d.]+ ms)/),
    workerdWholeRun: '—',
    agentsWholeRun: '—',
  };
}

/**
 * Samples the CPU of the processes under `root` once a second until stopped, and answers
 * the workerd processes' total and the agents' (with the engines each has reaped),
 * startup included: figures any tree's run gives, whatever its bench prints (a process's
 * last sample counts, so up to a second of its end is missed).
 */
function sampleRunCpu(root: number): { stop(): { workerd: number; agents: number } } {
  const workerd = new Map<number, number>();
  const agents = new Map<number, number>();
  const sample = () => {
    for (const pid of workerdPids(root))
      try {
        workerd.set(pid, cpuMs(pid));
      } catch {
        // ended between ps and /proc: its previous sample stands
      }
    for (const pid of agentPidsUnder(root))
      try {
        agents.set(pid, cpuMs(pid) + reapedChildrenCpuMs(pid));
      } catch {
        // as above
      }
  };
  const timer = setInterval(sample, 1000);
  const total = (m: Map<number, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  return {
    stop() {
      sample();
      clearInterval(timer);
      return { workerd: total(workerd), agents: total(agents) };
    },
  };
}

/** A run's whole-run CPU per job, as its table's rows. */
const wholeRun = (cpu: { workerd: number; agents: number }) => ({
  workerdWholeRun: `${(cpu.workerd / jobs).toFixed(1)} ms`,
  agentsWholeRun: `${(cpu.agents / jobs).toFixed(1)} ms`,
});

/** The prover-agent daemons under `root`: node processes running prover-agent's entry. */
function agentPidsUnder(root: number): number[] {
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid=,args='], { encoding: 'utf8' })
    .split('\n')
    .map((l) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(l))
    .filter((m) => m !== null)
    .map((m) => ({ pid: Number(m[1]), ppid: Number(m[2]), args: m[3] }));
  const mine = new Set([root]);
  for (let grew = true; grew;) {
    grew = false;
    for (const r of rows) if (mine.has(r.ppid) && !mine.has(r.pid)) (mine.add(r.pid), (grew = true));
  }
  return rows.filter((r) => mine.has(r.pid) && /prover-agent\S*\s+run\b/.test(r.args)).map((r) => r.pid);
}

/**
 * Runs the baseline commit's own bench:dispatch in a temporary extraction of it, on its
 * own tree only: with `--only current` when its bench has that flag (it would otherwise
 * run its own default baseline first, which may not even be in this repository).
 */
async function runBaseline(baselineRev: string): Promise<TreeRun> {
  const base = await resolveCommit(ROOT, baselineRev);
  const dir = await mkdtemp(path.join(tmpdir(), 'zk-bench-dispatch-'));
  try {
    console.error(`today: extracting ${base.hash.slice(0, 12)} ("${base.subject}") into ${dir}`);
    await extractCommit(ROOT, base.hash, dir);
    await markExtracted(dir, base.hash);
    const script = path.join(dir, 'test', 'bench', 'dispatch.ts');
    if (!existsSync(script)) throw new Error(`${base.hash.slice(0, 12)} has no test/bench/dispatch.ts: pick a later --baseline`);
    const ownTreeOnly = /\bonly\b/.test(await readFile(script, 'utf8')) ? ['--only', 'current'] : [];
    const child = spawn(
      process.execPath,
      [script, '--agents', String(agents), '--jobs', String(jobs), '--rate', String(rate), ...ownTreeOnly],
      {
        cwd: dir,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, WRANGLER_SEND_METRICS: 'false' },
      },
    );
    const runCpu = sampleRunCpu(child.pid!);
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => process.stderr.write(s.replace(/^(?=.)/gm, 'today: ')));
    const code = await new Promise<number | null>((resolve, reject) => child.on('error', reject).on('close', resolve));
    const lines = out.trim().split('\n');
    const figures = { ...figuresOf(lines), ...wholeRun(runCpu.stop()) };
    return { title: `today (${base.hash.slice(0, 7)})`, lines, figures, failed: code !== 0 };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Measures the working tree, printing as it goes; returns what it printed. */
async function runCurrent(): Promise<TreeRun> {
  const lines: string[] = [];
  const print = (line: string) => {
    lines.push(line);
    console.log(line);
  };
  const runCpu = sampleRunCpu(process.pid);
  const failed = await measure(print);
  const figures = { ...figuresOf(lines), ...wholeRun(runCpu.stop()) };
  const wt = await describeWorkingTree(ROOT);
  return { title: `now (${wt.head}${wt.dirty ? '+' : ''})`, lines, figures, failed };
}

/**
 * A tree's run, and once more if it measured nothing (its Worker did not start: a port
 * another process took between being found free and being bound), so that one such
 * start does not leave a column of the side-by-side table empty.
 */
async function runOnce(what: string, run: () => Promise<TreeRun>): Promise<TreeRun> {
  const first = await run();
  if (!first.failed || first.figures.jobsPerSecond !== '—') return first;
  console.error(`${what}: measured nothing (see above); running it once more`);
  return run();
}

async function main() {
  const runs: TreeRun[] = [];
  for (let round = 1; round <= rounds; round++) {
    const suffix = rounds > 1 ? ` #${round}` : '';
    if (only !== 'current')
      for (const rev of baselineRevs) {
        const today = await runOnce(`today (${rev})`, () => runBaseline(rev));
        console.log(`today: ${today.lines.join('\ntoday: ')}`);
        runs.push({ ...today, title: today.title + suffix });
      }
    if (only !== 'baseline') {
      const now = await runOnce('now', runCurrent);
      runs.push({ ...now, title: now.title + suffix });
    }
  }
  if (runs.length > 1) {
    const rows: [string, keyof TreeRun['figures']][] = [
      ['end to end', 'jobsPerSecond'],
      ['submit → claimed p50', 'claimedP50'],
      ['submit → claimed p99', 'claimedP99'],
      ['agent time per job', 'perJob'],
      ['  of which claim', 'claim'],
      ['  of which report', 'report'],
      ['agents busy', 'busy'],
      ['workerd CPU per job', 'workerdCpu'],
      ['  same, whole run', 'workerdWholeRun'],
      ['agent CPU per job', 'agentCpu'],
      ['  same, whole run', 'agentsWholeRun'],
      ['outcome', 'outcome'],
    ];
    const width = Math.max(...runs.map((r) => Math.max(r.title.length, ...Object.values(r.figures).map((v) => v.length)))) + 2;
    console.log(
      `\nbench:dispatch — ${agents} agents, ${jobs} instant jobs at ${rate}/s, side by side (target: ≥ 20 jobs/s with 4 agents on 2 cores)`,
    );
    console.log(`${''.padEnd(22)}${runs.map((r) => r.title.padEnd(width)).join('')}`);
    for (const [label, key] of rows) console.log(`${label.padEnd(22)}${runs.map((r) => r.figures[key].padEnd(width)).join('')}`);
  }
  if (runs.some((r) => r.failed)) process.exitCode = 1;
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** One run on the working tree's stack; true when a job was lost, doubled or not Succeeded. */
async function measure(print: (line: string) => void): Promise<boolean> {
  console.error(`starting the Worker and ${agents} agents...`);
  const inspectorPort = profileFile ? await freePort() : undefined;
  const stack = await startStack({ inspectorPort });
  try {
    const api = caller(stack);
    const fleet: AgentProcess[] = [];
    for (let i = 0; i < agents; i++) fleet.push(await stack.startAgent({ name: `bench-${i}`, extraArgs: ['--poll-interval', '0.05'] }));
    const program = await registerGuest(api, stack.devConfig, 'hello.elf');

    const profiler = inspectorPort ? await startCpuProfile(inspectorPort) : null;
    // The runtime's CPU over the run (the Worker and the local D1, R2, queues and rate limits it hosts), and the agents'.
    const workerd = workerdPids();
    const agentPids = fleet.map((a) => a.proc.pid!).filter(Boolean);
    const cpuNow = () => ({
      workerd: workerd.reduce((n, pid) => n + cpuMs(pid), 0),
      agents: agentPids.reduce((n, pid) => n + treeCpuMs(pid), 0),
    });
    const cpuBefore = cpuNow();
    console.error(`submitting ${jobs} proofs at ${rate}/s...`);
    const submittedAt = new Map<string, number>();
    const t0 = Date.now();
    const posts: Promise<void>[] = [];
    for (let i = 0; i < jobs; i++) {
      const due = t0 + (i * 1000) / rate;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const sent = Date.now();
      posts.push(
        api.json('POST', `/v1/proofs?program_id=${program}`, { input: ['0x0101'] }).then(({ id }) => void submittedAt.set(id, sent)),
      );
    }
    await Promise.all(posts);

    // Wait for every job to finish; the last one's terminated_at closes the window.
    const deadline = Date.now() + 300_000;
    let done: { id: string; state: string }[] = [];
    for (;;) {
      const page = await api.json('GET', `/v1/proofs?program_id=${program}&page_size=100&page=1`);
      const all = [];
      for (let p = 1; p <= page.pagination.pages; p++)
        all.push(...(await api.json('GET', `/v1/proofs?program_id=${program}&page_size=100&page=${p}`)).items);
      done = all.filter((x: any) => ['Succeeded', 'Failed', 'Canceled'].includes(x.state));
      if (done.length === jobs || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const cpuAfter = cpuNow();
    if (profiler && profileFile) {
      const profile = await profiler.stop();
      await writeFile(profileFile, JSON.stringify(profile));
      for (const line of summarizeProfile(profile)) console.error(line);
    }
    const rows = await stack.sql(
      `SELECT j.id AS job, j.subject_id AS proof, min(l.claimed_at) AS claimed, sum(l.outcome = 'completed') AS completions, p.terminated_at AS ended
       FROM jobs j JOIN leases l ON l.job_id = j.id JOIN proofs p ON p.id = j.subject_id
       WHERE j.kind = 'proof' AND p.program_id = '${program}' GROUP BY j.id`,
    );
    const latencies = rows.map((r) => Number(r.claimed) - submittedAt.get(r.proof as string)!).sort((a, b) => a - b);
    const lastEnd = Math.max(...rows.map((r) => Date.parse(r.ended as string)));
    const succeeded = done.filter((d) => d.state === 'Succeeded').length;
    const lost = jobs - rows.filter((r) => Number(r.completions) === 1).length;

    print(`bench:dispatch — ${agents} agents (dev engine), ${jobs} instant proof jobs submitted at ${rate}/s`);
    print(`submit → claimed   p50 ${pct(latencies, 50)} ms   p99 ${pct(latencies, 99)} ms   max ${latencies[latencies.length - 1]} ms`);
    print(
      `end to end         ${(jobs / ((lastEnd - t0) / 1000)).toFixed(1)} jobs/s (${((lastEnd - t0) / 1000).toFixed(1)} s from first submit to last Succeeded)`,
    );
    print(`outcome            ${succeeded}/${jobs} Succeeded, ${lost} lost or run twice`);
    printAgentTime(fleet, new Set(rows.map((r) => r.job as string)), (lastEnd - t0) / 1000, print);
    print(
      `CPU per job        workerd ${((cpuAfter.workerd - cpuBefore.workerd) / jobs).toFixed(1)} ms (the Worker and the local platform it hosts), agents ${((cpuAfter.agents - cpuBefore.agents) / jobs).toFixed(1)} ms`,
    );
    return lost > 0 || succeeded !== jobs;
  } finally {
    await stack.stop();
  }
}

/** CPU a process and its descendants (an agent and its engines, those that ended too) have used, in ms; a process gone counts nothing. */
function treeCpuMs(root: number): number {
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' })
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number))
    .filter((r) => r.length === 2);
  const tree = new Set([root]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, ppid] of rows) if (tree.has(ppid) && !tree.has(pid)) (tree.add(pid), (grew = true));
  }
  let total = 0;
  try {
    total += reapedChildrenCpuMs(root);
  } catch {
    // Ended meanwhile.
  }
  for (const pid of tree)
    try {
      total += cpuMs(pid);
    } catch {
      // Ended meanwhile.
    }
  return total;
}

/** Mean time per job on the agents, by step, from their 'claimed job' and 'job finished' log lines. */
function printAgentTime(fleet: AgentProcess[], jobIds: Set<string>, windowS: number, print: (line: string) => void) {
  const claims: number[] = [];
  const totals: number[] = [];
  const steps: Record<string, number[]> = {};
  for (const a of fleet) {
    for (const line of a.logs()) {
      if (!line.startsWith('{')) continue;
      const e = JSON.parse(line) as { msg: string; job_id?: string; claim_ms?: number; seconds?: number; ms?: Record<string, number> };
      if (!e.job_id || !jobIds.has(e.job_id)) continue;
      if (e.msg === 'claimed job' && e.claim_ms !== undefined) claims.push(e.claim_ms);
      if (e.msg === 'job finished' && e.seconds !== undefined && e.ms) {
        totals.push(e.seconds * 1000);
        for (const [k, v] of Object.entries(e.ms)) (steps[k] ??= []).push(v);
      }
    }
  }
  if (totals.length === 0) return;
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const stepMeans = Object.entries(steps).map(([k, xs]) => [k, mean(xs)] as const);
  const other = mean(totals) - stepMeans.reduce((a, [, v]) => a + v, 0);
  const parts = [...stepMeans, ['other', other] as const].map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ');
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const busy = (sum(claims) + sum(totals)) / 1000 / (fleet.length * windowS);
  // Per job, over all jobs: a job its predecessor's completion claimed has no claim request of its own (its claim is in `report`).
  const claimPerJob = sum(claims) / totals.length;
  print(
    `agent time per job mean ${(claimPerJob + mean(totals)).toFixed(0)} ms: claim ${claimPerJob.toFixed(0)} + run ${mean(totals).toFixed(0)} (${parts}) ms`,
  );
  print(
    `agents busy        ${(busy * 100).toFixed(0)}% of ${fleet.length} × ${windowS.toFixed(1)} s in claims and jobs; the rest is queue pulls, acks and waiting for work`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
