// The whole product, end to end: a Worker under wrangler dev and real prover-agent
// processes with the dev engine, driven through the public API as a caller would.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createConfig } from '../../src/admin/statements.ts';
import { caller, GUESTS, registerGuest, startStack, type AgentProcess, type Stack } from './stack.ts';
import { MAX_INLINE_ARTIFACT_BYTES } from 'prover-agent/protocol';

let stack: Stack;
let agent: AgentProcess;
let api: ReturnType<typeof caller>;

beforeAll(async () => {
  stack = await startStack({ vars: { RENOTIFY_AFTER_SECONDS: '0' } });
  api = caller(stack);
  agent = await stack.startAgent({ name: 'e2e-main' });
});
afterAll(async () => stack?.stop());

const bytesInput = (text: string) => '0x01' + Buffer.from(text).toString('hex');

describe('end to end with the dev engine', () => {
  it('a registered program becomes ready with its exe commit', async () => {
    const id = await registerGuest(api, stack.devConfig, 'hello.elf');
    const program = await api.json('GET', `/v1/programs/${id}`);
    expect(program).toMatchObject({ status: 'ready', error_message: '' });
    const commit = await (await api.call('GET', `/v1/programs/${id}/download/app_exe_commit`)).text();
    expect(commit).toMatch(/^[0-9a-f]{64}$/);
  });

  it('a proof goes through its states to Succeeded; the proof downloads and verifies; logs are kept', async () => {
    const program = await registerGuest(api, stack.devConfig, 'hello.elf');
    const { id } = await api.json('POST', `/v1/proofs?program_id=${program}`, { input: [bytesInput('hello world')] });
    const proof = await api.waitFor(`/v1/proofs/${id}`, (p: any) => ['Succeeded', 'Failed'].includes(p.state));
    expect(proof).toMatchObject({ state: 'Succeeded', machine_type: 'e2e', error_message: '' });
    expect(proof.num_instructions).toBeGreaterThan(1000);
    expect(proof.proof_size).toBeGreaterThan(0);
    expect(proof.launched_at).toEqual(expect.any(String));
    expect(proof.terminated_at).toEqual(expect.any(String));

    const file = await api.json('GET', `/v1/proofs/${id}/proof/stark`);
    expect(file).toMatchObject({ version: expect.any(String), proof: expect.any(String), user_pvs_proof: expect.any(String) });
    const digest = createHash('sha256').update('hello world').digest('hex');
    expect(file.user_pvs_proof.replace(/^0x/, '')).toContain(digest);

    const logs = await (await api.call('GET', `/v1/proofs/${id}/logs`)).text();
    // Logs name the proof id the caller holds, never the internal job id.
    expect(logs).toContain(`attempt 1 of proof ${id} on`);
    const [{ id: jobId }] = (await stack.sql(`SELECT id FROM jobs WHERE subject_id = '${id}'`)) as { id: string }[];
    expect(logs).not.toContain(jobId);
    expect(logs).toMatch(/hello from the dev zkVM: read 11 bytes/);

    // Verification: the genuine proof verifies; a tampered one does not.
    const verify = async (text: string) => {
      const form = new FormData();
      form.append('proof', new Blob([text], { type: 'application/json' }), 'proof.json');
      const { id: vid } = await api.json('POST', `/v1/verify/stark?program_id=${program}`, form);
      return api.waitFor(`/v1/verify/${vid}`, (v: any) => v.result !== 'processing');
    };
    const text = JSON.stringify(file);
    expect((await verify(text.replaceAll('0x', ''))).result).toBe('verified'); // as the published client uploads it
    const tampered = {
      ...file,
      user_pvs_proof: file.user_pvs_proof.replace(/[0-9a-f](?=[0-9a-f]*$)/, (c: string) => (c === '0' ? '1' : '0')),
    };
    const rejected = await verify(JSON.stringify(tampered));
    expect(rejected.result).toBe('failed');
    expect(rejected.error_message).not.toBe('');

    const rec = await api.json('GET', `/v1/programs/${program}`);
    expect(rec.proofs_run).toBe(1);
  });

  it('a program proven again: its files come from the agent’s artifact cache; a small input comes with the claim, a large one is downloaded', async () => {
    const outcomes = ['hit', 'miss', 'off', 'inline'] as const;
    const artifacts = async () => {
      const text = await (await fetch(`http://127.0.0.1:${agent.metricsPort}/metrics`)).text();
      const count = (outcome: string) =>
        Number(new RegExp(`^prover_agent_artifacts_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
      return Object.fromEntries(outcomes.map((o) => [o, count(o)]));
    };
    const program = await registerGuest(api, stack.devConfig, 'hello.elf'); // its commit fetched the ELF and VMEXE
    const prove = async (text: string) => {
      const before = await artifacts();
      const { id } = await api.json('POST', `/v1/proofs?program_id=${program}`, { input: [bytesInput(text)] });
      const proof = await api.waitFor(`/v1/proofs/${id}`, (p: any) => ['Succeeded', 'Failed'].includes(p.state));
      expect(proof.state).toBe('Succeeded');
      const file = await api.json('GET', `/v1/proofs/${id}/proof/stark`);
      expect(file.user_pvs_proof.replace(/^0x/, '')).toContain(createHash('sha256').update(text).digest('hex'));
      const after = await artifacts();
      return Object.fromEntries(outcomes.map((o) => [o, after[o] - before[o]]));
    };
    expect(await prove('first')).toEqual({ hit: 2, miss: 1, off: 0, inline: 1 }); // ELF and VMEXE kept from the commit; the baseline is new
    expect(await prove('second')).toEqual({ hit: 3, miss: 0, off: 0, inline: 1 }); // nothing downloaded at all
    expect(await prove('x'.repeat(MAX_INLINE_ARTIFACT_BYTES))).toEqual({ hit: 3, miss: 0, off: 1, inline: 0 }); // its input file (hex) is past the inline bound
  });

  it('deferred child proofs: a matching child is folded in; a child of another program fails the job at proving time', async () => {
    const program = await registerGuest(api, stack.devConfig, 'hello.elf');
    const other = await registerGuest(api, stack.devConfig, 'loop.elf');
    const proveWithChildren = async (children: string[]) => {
      const form = new FormData();
      form.append('input', JSON.stringify({ input: [bytesInput('parent')] }));
      for (const c of children) form.append('child_proofs', new Blob([c], { type: 'application/json' }), 'child.json');
      const { id } = await api.json('POST', `/v1/proofs?program_id=${program}`, form);
      return api.waitFor(`/v1/proofs/${id}`, (p: any) => ['Succeeded', 'Failed'].includes(p.state));
    };
    const starkOf = async (prog: string, input: object) => {
      const { id } = await api.json('POST', `/v1/proofs?program_id=${prog}`, input);
      await api.waitFor(`/v1/proofs/${id}`, (p: any) => p.state === 'Succeeded');
      return (await api.call('GET', `/v1/proofs/${id}/proof/stark`)).text();
    };
    const own = await starkOf(program, { input: [bytesInput('child')] });
    const foreign = await starkOf(other, { input: ['0x010a000000'] });
    expect(await proveWithChildren([own])).toMatchObject({ state: 'Succeeded', num_deferred_proofs: 1 });
    const failed = await proveWithChildren([own, foreign]);
    expect(failed.state).toBe('Failed');
    expect(failed.error_message).toMatch(/child proof 1/);
  });

  it('an evm proof comes out in the zkVM’s EVM proof shape', async () => {
    const program = await registerGuest(api, stack.devConfig, 'hello.elf');
    const { id } = await api.json('POST', `/v1/proofs?program_id=${program}&proof_type=evm`, { input: [bytesInput('evm')] });
    expect(await api.waitFor(`/v1/proofs/${id}`, (p: any) => ['Succeeded', 'Failed'].includes(p.state))).toMatchObject({
      state: 'Succeeded',
      proof_type: 'evm',
    });
    const evm = await api.json('GET', `/v1/proofs/${id}/proof/evm`);
    expect(evm).toMatchObject({
      version: expect.any(String),
      app_exe_commit: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      proof_data: { accumulator: expect.any(String), proof: expect.any(String) },
    });
    expect(evm.user_public_values).toContain(createHash('sha256').update('evm').digest('hex'));
    expect((await api.call('GET', `/v1/proofs/${id}/proof/stark`)).status).toBe(404);

    // Unified verification against the config alone, as `cargo axiom verify evm` sends it (every 0x removed).
    const verify = async (doc: unknown) => {
      const form = new FormData();
      form.append('proof', new Blob([JSON.stringify(doc).replaceAll('0x', '')], { type: 'application/json' }), 'proof.json');
      const { id: vid } = await api.json('POST', `/v1/verify?config_id=${'cfg_' + stack.devConfig.slice(4).toLowerCase()}`, form);
      return api.waitFor(`/v1/verify/${vid}`, (v: any) => v.result !== 'processing');
    };
    expect(await verify(evm)).toMatchObject({ result: 'verified', proof_type: 'evm', program_uuid: null, error_message: '' });
    const tampered = await verify({
      ...evm,
      user_public_values: evm.user_public_values.replace(/.$/, (c: string) => (c === '0' ? '1' : '0')),
    });
    expect(tampered).toMatchObject({ result: 'failed', proof_type: 'evm' });
    expect(tampered.error_message).toMatch(/MAC mismatch/);
  });

  it('a guest that panics fails the proof with its own message', async () => {
    const program = await registerGuest(api, stack.devConfig, 'panic.elf');
    const { id } = await api.json('POST', `/v1/proofs?program_id=${program}`, { input: [] });
    const proof = await api.waitFor(`/v1/proofs/${id}`, (p: any) => ['Succeeded', 'Failed'].includes(p.state));
    expect(proof.state).toBe('Failed');
    expect(proof.error_message.length).toBeGreaterThan(0);
  });

  it('executions run and report public values and cycle counts', async () => {
    const program = await registerGuest(api, stack.devConfig, 'hello.elf');
    const { id } = await api.json('POST', `/v1/executions?program_id=${program}&mode=pure`, { input: [bytesInput('abc')] });
    // The published client's `run --wait` loop ends on exactly these spellings.
    const ended = (e: any) => ['Succeeded', 'Failed'].includes(e.status);
    const ex = await api.waitFor(`/v1/executions/${id}`, ended);
    expect(ex).toMatchObject({
      status: 'Succeeded',
      num_segments: null,
      public_values: expect.stringContaining(createHash('sha256').update('abc').digest('hex')),
    });
    expect(ex.total_cycle).toBeGreaterThan(0);
    expect(await (await api.call('GET', `/v1/executions/${id}/logs`)).text()).toMatch(/read 3 bytes/);

    const { id: segmented } = await api.json('POST', `/v1/executions?program_id=${program}&mode=segment`, { input: [bytesInput('abc')] });
    expect(await api.waitFor(`/v1/executions/${segmented}`, ended)).toMatchObject({ status: 'Succeeded', num_segments: 1 });

    const panics = await registerGuest(api, stack.devConfig, 'panic.elf');
    const { id: failed } = await api.json('POST', `/v1/executions?program_id=${panics}&mode=pure`, { input: [] });
    const fail = await api.waitFor(`/v1/executions/${failed}`, ended);
    expect(fail).toMatchObject({ status: 'Failed', public_values: null, error_message: expect.stringMatching(/./) });
  });

  it('a job no agent can serve stays queued and says why in its logs (cron sweep)', async () => {
    const step = createConfig({
      openvm_version: '2.0.0',
      stark_backend_version: '2.0.0',
      app_vm_commit: '0x' + '77'.repeat(32),
      engine: 'openvm',
      deferral_enabled: false,
    });
    await stack.sql(step.sql.join('\n'));
    const form = new FormData();
    form.append('elf', new Blob([await readFile(join(GUESTS, 'hello.elf'))]), 'hello.elf');
    form.append('vmexe', new Blob(['vmexe']), 'program.vmexe');
    const { id: program } = await api.json('POST', `/v1/programs?config_id=${step.output[1]}`, form);
    const [job] = await stack.sql(`SELECT id FROM jobs WHERE subject_id = '${program}'`);
    const reason = async () => (await stack.sql(`SELECT waiting_reason FROM jobs WHERE id = '${job.id}'`))[0].waiting_reason;
    const deadline = Date.now() + 20_000;
    await stack.sweep();
    while (!(await reason())) {
      if (Date.now() > deadline) throw new Error('the sweep recorded no waiting reason');
      await new Promise((r) => setTimeout(r, 200));
    }
    // Programs have no logs endpoint; the reason is written to the job's logs and row.
    expect(await reason()).toMatch(/no online agent runs the 'openvm' engine/);
    expect((await api.json('GET', `/v1/programs/${program}`)).status).toBe('not_ready');
  });

  it('serves /healthz and Prometheus /metrics on the agent', async () => {
    const health = await (await fetch(`http://127.0.0.1:${agent.metricsPort}/healthz`)).json();
    expect(health).toMatchObject({ ok: true, state: 'running' });
    const workers = health.engine_workers;
    expect(workers.starting + workers.idle + workers.busy).toBe(1); // the dev engine's warm worker (concurrency 1)
    const metrics = await (await fetch(`http://127.0.0.1:${agent.metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/prover_agent_jobs_total\{kind="proof",outcome="completed"\} \d+/);
    expect(metrics).toMatch(/prover_agent_claim_latency_seconds_bucket/);
  });
});
