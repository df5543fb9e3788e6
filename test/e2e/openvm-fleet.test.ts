// The openvm engine on the fleet, against the stand-in for the zkVM's CLI
// (test/engine/openvm/fake-cargo): real STARK proofs in the tool's format come out,
// each job runs on one GPU (the CLI's only mode) and is recorded and billed so, a
// 2-GPU agent runs two at once, and a cancel while proving kills the tool's whole
// process group.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConfig } from '../../src/admin/statements.ts';
import { alive, config, FAKE_CARGO, makeHost, makeJob, OPENVM_TOML, runCli, type Host } from '../engine/openvm/harness.ts';
import { caller, registerGuest, startStack, type Stack } from './stack.ts';

let stack: Stack;
let host: Host;
let api: ReturnType<typeof caller>;
let configId: string;

beforeAll(async () => {
  stack = await startStack({ vars: { LEASE_TTL_SECONDS: '6' } });
  api = caller(stack);
  host = await makeHost();
  // The config's app_vm_commit is what this host's keys give (as `setup-config` reports on a real host).
  const job = await makeJob(host);
  const { app_vm_commit } = await host.engine().commit(job.ctx, { elfPath: job.files.elf, vmexePath: job.files.vmexe });
  const step = createConfig({
    id: config().id,
    openvm_version: '2.0.0',
    stark_backend_version: '2.0.0',
    app_vm_commit,
    engine: 'openvm',
    deferral_enabled: false,
  });
  await stack.sql(step.sql.join('\n'));
  configId = step.output[step.output.length - 1]!;
}, 180_000);
afterAll(async () => {
  await stack?.stop();
  await host?.cleanup();
});

const openvmAgent = (env: Record<string, string> = {}) =>
  stack.startAgent({
    name: 'gpu-box',
    engines: 'openvm',
    gpus: 2,
    machineType: 'fake-gpu',
    extraArgs: ['--configs-dir', host.configsDir, '--cargo', FAKE_CARGO],
    env: { ...host.env, ...env },
  });

describe('openvm engine on the fleet (stand-in tool)', () => {
  it('commits, proves a STARK proof on one GPU whatever the job asks for, and verifies it', async () => {
    const agent = await openvmAgent();
    const program = await registerGuest(api, configId, 'hello.elf');
    expect((await api.json('GET', `/v1/programs/${program}`)).status).toBe('ready');
    // No num_gpus: the program's default, 8 (the reference default clients send).
    const { id } = await api.json('POST', `/v1/proofs?program_id=${program}`, { input: ['0x0161'] });
    const proof = await api.waitFor(`/v1/proofs/${id}`, (p: any) => ['Succeeded', 'Failed'].includes(p.state));
    expect(proof).toMatchObject({ state: 'Succeeded', machine_type: 'fake-gpu', num_gpus: 1 });
    const stark = await api.json('GET', `/v1/proofs/${id}/proof/stark`);
    expect(stark.version).toBe('v2.0');
    const calls = await host.invocations();
    expect(calls.find((c) => c.argv.includes('prove'))?.cuda_visible_devices).toBe('0');
    const form = new FormData();
    form.append('proof', new Blob([JSON.stringify(stark)]), 'proof.json');
    const { id: v } = await api.json('POST', `/v1/verify/stark?program_id=${program}`, form);
    expect((await api.waitFor(`/v1/verify/${v}`, (r: any) => r.result !== 'processing')).result).toBe('verified');
    agent.signal('SIGTERM');
    await agent.exited;
  });

  it('a 2-GPU agent runs two 8-GPU proofs at once, one per GPU, each recorded and billed as 1 GPU', async () => {
    // Each prover waits at a barrier until the other has started: they only both finish if they ran together.
    const barrier = `${host.root}/barrier-${Date.now()}`;
    const agent = await openvmAgent({ FAKE_OPENVM_BARRIER: `${barrier}:2` });
    const program = await registerGuest(api, configId, 'hello.elf');
    const ids: string[] = [];
    for (const input of ['0x0161', '0x0162'])
      ids.push((await api.json('POST', `/v1/proofs?program_id=${program}&num_gpus=8`, { input: [input] })).id);
    const proofs = await Promise.all(
      ids.map((id) => api.waitFor(`/v1/proofs/${id}`, (p: any) => ['Succeeded', 'Failed'].includes(p.state), 60_000)),
    );
    for (const p of proofs) expect(p).toMatchObject({ state: 'Succeeded', num_gpus: 1 });
    const devices = (await readdir(barrier)).map((pid) => readFileSync(`${barrier}/${pid}`, 'utf8')).sort();
    expect(devices).toEqual(['0', '1']);
    for (const [i, p] of proofs.entries()) {
      const [lease] = await stack.sql(
        `SELECT gpus, claimed_at, ended_at FROM leases WHERE job_id = (SELECT id FROM jobs WHERE subject_id = '${ids[i]}') AND outcome = 'completed'`,
      );
      expect(lease.gpus).toBe(1);
      // docs/callers.md "Cost": hours × GPUs × the machine's rate (1.0 here) in micro-USD, on the one GPU used.
      const hours = (Number(lease.ended_at) - Number(lease.claimed_at)) / 3_600_000;
      expect(p.cost).toBe(Math.round(hours * 1 * 1.0 * 1_000_000));
    }
    agent.signal('SIGTERM');
    await agent.exited;
  });

  it('cancel while proving kills the tool’s process group and ends Canceled', async () => {
    const agent = await openvmAgent({ FAKE_OPENVM_HANG: 'prove' });
    const program = await registerGuest(api, configId, 'hello.elf');
    // Only this test's invocations: the stand-in's log also holds the previous test's (dead) prover.
    const before = (await host.invocations()).length;
    const { id } = await api.json('POST', `/v1/proofs?program_id=${program}&num_gpus=1`, { input: ['0x0161'] });
    await api.waitFor(`/v1/proofs/${id}`, (p: any) => p.state === 'AppProving');
    // Bounded waits that say what the agent saw: this test once hung under a loaded full run.
    // Its health too: what it says it is doing, or that it does not answer (a blocked event loop).
    const agentSaw = async () => {
      const health = await agent.health();
      return `the agent's health: ${health}\nthe agent's last lines:\n${agent.logs().slice(-25).join('\n')}\nthe Worker's last lines:\n${stack.workerLogs().slice(-25).join('\n')}`;
    };
    const within = async <T>(what: string, p: Promise<T>, ms: number): Promise<T> => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>(
        (_, reject) =>
          (timer = setTimeout(() => void agentSaw().then((saw) => reject(new Error(`${what}: not within ${ms} ms; ${saw}`))), ms)),
      );
      try {
        return await Promise.race([p, late]);
      } finally {
        clearTimeout(timer);
      }
    };
    const proverStarted = async () => {
      for (;;) {
        const pid = (await host.invocations())
          .slice(before)
          .filter((c) => c.argv.includes('prove'))
          .pop()?.pid;
        if (pid) return pid;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const prover = await within('the prover’s start', proverStarted(), 20_000);
    expect(alive(prover)).toBe(true);
    await api.json('POST', `/v1/proofs/${id}/cancel`, {});
    expect(
      (
        await within(
          'Canceled',
          api.waitFor(`/v1/proofs/${id}`, (p: any) => p.state === 'Canceled', 20_000),
          25_000,
        )
      ).state,
    ).toBe('Canceled');
    expect(alive(prover)).toBe(false);
    agent.signal('SIGTERM');
    // Nothing runs, so it exits as soon as a claim in flight is answered (at most 15 s,
    // CLAIM_TIMEOUT_MS in prover-agent/src/agent/agent.ts) and it has told the service it left.
    expect(await within('the agent’s exit after SIGTERM', agent.exited, 45_000)).toBe(0);
  });

  it('an operator prepares a host from the service’s config and publishes its keys; callers download them through the signed URLs', async () => {
    await stack.sql(`UPDATE configs SET openvm_toml = '${OPENVM_TOML}' WHERE id = '${configId}'`);
    // The agent token alone cannot publish: the operator's publisher token does.
    const agentOnly = await runCli(['setup-config', configId, '--configs-dir', host.configsDir, '--cargo', FAKE_CARGO, '--publish'], {
      ...host.env,
      PROVER_API_URL: stack.url,
      PROVER_AGENT_TOKEN: stack.agentToken,
    });
    expect(agentOnly.code).toBe(2);
    const env = {
      ...host.env,
      PROVER_API_URL: stack.url,
      PROVER_AGENT_TOKEN: stack.agentToken,
      PROVER_PUBLISHER_TOKEN: stack.publisherToken,
    };
    const res = await runCli(
      ['setup-config', configId, '--configs-dir', host.configsDir, '--cargo', FAKE_CARGO, '--run', '--publish'],
      env,
    );
    expect(res.code, res.stderr).toBe(0);
    expect(readFileSync(join(host.configDir, 'openvm.toml'), 'utf8')).toBe(OPENVM_TOML);
    const files: Record<string, string> = {
      'pk/app': join(host.configDir, 'openvm', 'app.pk'),
      'vk/app': join(host.configDir, 'openvm', 'app.vk'),
      'pk/agg': join(host.home, '.openvm', 'internal_recursive.pk'),
      'vk/agg': join(host.home, '.openvm', 'internal_recursive.vk'),
    };
    for (const [path, file] of Object.entries(files)) {
      // As `cargo axiom config download-keys` does: ask for the URL, then GET it with no API key.
      const { download_url, sha256 } = await api.json('GET', `/v1/configs/${configId}/${path}`);
      const got = await fetch(download_url);
      expect(got.status).toBe(200);
      const bytes = readFileSync(file);
      expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);
      const digest = createHash('sha256').update(bytes);
      expect(sha256).toBe(digest.copy().digest('hex'));
      expect(got.headers.get('repr-digest')).toBe(`sha-256=:${digest.digest('base64')}:`);
    }
    // Without --evm no EVM keys were published, and the API says how to publish them.
    expect((await api.call('GET', `/v1/configs/${configId}/pk/halo2`)).status).toBe(404);
  });
});
