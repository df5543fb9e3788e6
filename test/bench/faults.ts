// npm run bench:faults [-- --runs 5 --cancels 20 --burst 200 --agents 4]
//
// On the local stack (wrangler dev + real prover-agents, the dev engine) with the
// service's default timings (12 s lease, 5 s heartbeats, 1 s cancel checks; each lease
// is looked at when it would expire; idle agents pull every second, as deployed), measures:
//   agent death → rerun: an agent is SIGKILLed mid-proof, at a random point of its
//     heartbeat cycle, with an idle agent standing by; time from the kill to the claim
//     of attempt 2 (D1 leases.claimed_at). No cron sweep runs.
//   cancel → engine stopped: POST /v1/proofs/{id}/cancel on a running proof, at a random
//     point of its heartbeat cycle; time from the answer to the engine's process
//     group being gone (ps; the engine's pid is the one the agent logged for the job:
//     a warm worker's command line names no job).
//   fair share: org A queues a burst of short proofs, then org B queues 5; B's wait from
//     submit to claim, and how many of A's jobs were claimed meanwhile.
// Numbers only: nothing here passes or fails on a timing.
import { createApiKey, createOrganization } from '../../src/admin/statements.ts';
import { d1Execute } from '../../src/tools/wrangler.ts';
import { caller, liveProcessGroups, registerGuest, startStack, until, type AgentProcess, type Stack } from '../e2e/stack.ts';
import { benchCli } from './cli.ts';

const usage = `usage: npm run bench:faults -- [--runs N] [--cancels N] [--burst N] [--agents N]
  --runs N      agent deaths (SIGKILL mid-job) measured (default 5)
  --cancels N   cancels of a running job measured (default 20)
  --burst N     org A's queued jobs while org B submits (default 200)
  --agents N    agents serving the burst (default 4)`;
const cli = benchCli('bench:faults', usage, ['runs', 'cancels', 'burst', 'agents']);
const runs = cli.number('runs', 5, 1);
const cancels = cli.number('cancels', 20, 1);
const burst = cli.number('burst', 200, 1);
const agentCount = cli.number('agents', 4, 1);

/** Agents as deployed: the e2e stack's fast polling back to the 1 s default. */
const AS_DEPLOYED = ['--poll-interval', '1'];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const loopInput = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return { input: ['0x01' + b.toString('hex')] };
};
const LONG = 4_000_000_000; // ~15 s in a warm dev-engine worker, whose JIT is warm too (1.5e9 ran in 6 s and finished before a cancel)
const SHORT = 30_000_000; // ~0.5 s

async function jobOf(stack: Stack, proofId: string): Promise<string> {
  for (;;) {
    const [row] = await stack.sql(`SELECT id FROM jobs WHERE subject_id = '${proofId}'`);
    if (row) return row.id as string;
    await sleep(50);
  }
}

/** The job's engine process groups on agent `a` that are still alive. */
function enginePids(a: AgentProcess, jobId: string): number[] {
  return liveProcessGroups(a.enginePids(jobId));
}

async function main() {
  console.error('starting the Worker...');
  const stack = await startStack();
  const api = caller(stack);
  const agents: AgentProcess[] = [];
  const agent = async (name: string) => {
    const a = await stack.startAgent({ name, extraArgs: AS_DEPLOYED });
    agents.push(a);
    return a;
  };
  const kill = async (a: AgentProcess) => {
    if (a.proc.exitCode === null) {
      a.signal('SIGKILL');
      await a.exited;
    }
  };
  try {
    const setup = await agent('setup');
    const program = await registerGuest(api, stack.devConfig, 'loop.elf');
    await kill(setup);

    // --- agent death → rerun
    const recovery: number[] = [];
    for (let i = 0; i < runs; i++) {
      const doomed = await agent(`doomed-${i}`);
      const { id } = await api.json('POST', `/v1/proofs?program_id=${program}`, loopInput(LONG));
      const jobId = await jobOf(stack, id);
      await until('the first attempt', async () => enginePids(doomed, jobId).length > 0);
      const rescuer = await agent(`rescuer-${i}`);
      await sleep(Math.random() * 5000); // anywhere in the heartbeat cycle
      const killedAt = Date.now();
      await kill(doomed);
      const claimed = await until(
        'the second attempt',
        async () =>
          (await stack.sql(`SELECT claimed_at FROM leases WHERE job_id = '${jobId}' AND attempt = 2`))[0]?.claimed_at as number | undefined,
        120_000,
        100,
      );
      recovery.push(Number(claimed) - killedAt);
      console.error(`  death → rerun ${i + 1}/${runs}: ${Number(claimed) - killedAt} ms`);
      await api.json('POST', `/v1/proofs/${id}/cancel`, {});
      await until('the rerun to stop', async () =>
        ['Canceled', 'Failed', 'Succeeded'].includes((await api.json('GET', `/v1/proofs/${id}`)).state),
      );
      await kill(rescuer);
    }

    // --- cancel → engine stopped
    const stops: number[] = [];
    const canceler = await agent('canceler');
    for (let i = 0; i < cancels; i++) {
      const { id } = await api.json('POST', `/v1/proofs?program_id=${program}`, loopInput(LONG));
      const jobId = await jobOf(stack, id);
      await until('the engine', async () => enginePids(canceler, jobId).length > 0);
      await sleep(Math.random() * 5000);
      const answer = await api.json('POST', `/v1/proofs/${id}/cancel`, {}).catch((err: Error) => {
        const seen = canceler.logs().filter((l) => l.includes(jobId));
        throw new Error(`${err.message}; the agent's lines about job ${jobId}:\n${seen.slice(-30).join('\n')}`);
      });
      const answeredAt = Date.now();
      if (answer.state !== 'Canceling') throw new Error(`cancel answered ${JSON.stringify(answer)}`);
      await until('the engine to stop', async () => enginePids(canceler, jobId).length === 0, 60_000, 10).catch((err: Error) => {
        // What the agent saw of this job says where the cancel got stuck.
        const seen = canceler.logs().filter((l) => l.includes(jobId) || l.includes('engine worker'));
        throw new Error(
          `${err.message} (job ${jobId}, engine pids ${enginePids(canceler, jobId).join(',')}); the agent's lines about it:\n${seen.slice(-30).join('\n')}`,
        );
      });
      const stopped = Date.now() - answeredAt;
      stops.push(stopped);
      const done = await until('Canceled', async () => {
        const p = await api.json('GET', `/v1/proofs/${id}`);
        return ['Canceled', 'Failed', 'Succeeded'].includes(p.state) && p;
      });
      if (done.state !== 'Canceled') throw new Error(`a canceled proof ended ${done.state}`);
      console.error(`  cancel → engine stopped ${i + 1}/${cancels}: ${stopped} ms`);
    }
    await kill(canceler);

    // --- fair share under a burst
    const orgB = [createOrganization('bench org B', 'org_bench_b'), await createApiKey('org_bench_b', 'b@bench')];
    await d1Execute(
      { remote: false, persistTo: stack.persistDir },
      orgB.flatMap((s) => s.sql),
    );
    const apiB = caller({ url: stack.url, apiKey: orgB[1].output.at(-1)! });
    for (let i = 0; i < agentCount; i++) await agent(`fleet-${i}`);
    const programB = await registerGuest(apiB, stack.devConfig, 'loop.elf');
    console.error(`org A queues ${burst} proofs of ~0.5 s...`);
    for (let i = 0; i < burst; i += 20)
      await Promise.all(
        Array.from({ length: Math.min(20, burst - i) }, () =>
          api.json('POST', `/v1/proofs?program_id=${program}&priority=10`, loopInput(SHORT)),
        ),
      );
    const bSubmitted = new Map<string, number>();
    for (let i = 0; i < 5; i++) {
      const sent = Date.now();
      const { id } = await apiB.json('POST', `/v1/proofs?program_id=${programB}&priority=1`, loopInput(SHORT));
      bSubmitted.set(id, sent);
    }
    const bClaims = await until(
      'org B’s jobs to start',
      async () => {
        const rows = await stack.sql(
          `SELECT j.subject_id AS proof, min(l.claimed_at) AS claimed FROM jobs j JOIN leases l ON l.job_id = j.id WHERE j.org_id = 'org_bench_b' AND j.kind = 'proof' GROUP BY j.id`,
        );
        return rows.length === 5 && rows;
      },
      300_000,
      200,
    );
    const waits = bClaims.map((r) => Number(r.claimed) - bSubmitted.get(r.proof as string)!);
    const firstB = Math.min(...bSubmitted.values());
    const lastBClaim = Math.max(...bClaims.map((r) => Number(r.claimed)));
    const [{ n: aMeanwhile }] = (await stack.sql(
      `SELECT count(*) AS n FROM leases l JOIN jobs j ON j.id = l.job_id WHERE j.org_id = 'org_e2e' AND l.claimed_at BETWEEN ${firstB} AND ${lastBClaim}`,
    )) as [{ n: number }];
    const [{ n: aQueued }] = (await stack.sql(`SELECT count(*) AS n FROM jobs WHERE org_id = 'org_e2e' AND status = 'queued'`)) as [
      { n: number },
    ];

    console.log(
      `bench:faults — local stack, dev engine, default timings (lease 12 s, heartbeat 5 s, cancel check 1 s, lease checks at expiry, idle pulls every 1 s)`,
    );
    console.log(
      `agent death → rerun          p50 ${pct(recovery, 50)} ms   max ${Math.max(...recovery)} ms   (${runs} SIGKILLs, an idle agent standing by)`,
    );
    console.log(
      `cancel answer → engine gone  p50 ${pct(stops, 50)} ms   p99 ${pct(stops, 99)} ms   max ${Math.max(...stops)} ms   (${cancels} cancels)`,
    );
    console.log(
      `org B's wait under A's burst p50 ${pct(waits, 50)} ms   max ${Math.max(...waits)} ms   (${agentCount} agents; A queued ${burst}, B 5; ${aMeanwhile} of A's claimed meanwhile, ${aQueued} of A's still queued after B's 5 started)`,
    );
  } finally {
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
