// Conformance with the published client (issue 9): every `cargo axiom` command of
// axiom-crypto/axiom-api-cli v2.0.0 that talks to the API, replayed against the real local
// stack (wrangler dev with local D1/R2/Queues and a prover-agent with the dev engine)
// exactly as the client's source builds its requests, with every answer checked against
// the client's own structs (presence, type, nullability, the spellings it matches on).
//
// The replayed SDK is in ./client-replay/client.ts (requests, with `v2.0.0:path:line`
// citations), the structs in ./client-replay/shapes.ts, and the binary codec of deferred
// child proofs in ./client-replay/codec.ts. One `describe` per command group, one `it`
// per command. `cargo axiom init`, `version` and `completions` make no API call
// (v2.0.0:crates/cli/src/commands/init.rs:90-255 runs `cargo openvm init` and fetches a
// template from GitHub; version.rs and main.rs:157-160 print locally), so they have no test.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConfig, TARGET_RELEASE } from '../../src/admin/statements.ts';
import { expectShape, parseJson, REFERENCE_DEFAULT_CONFIG_ID, ReplayClient, type Reply } from './client-replay/client.ts';
import { decodeVersionedStarkProof, encodeVersionedStarkProof, type StarkProofJson } from './client-replay/codec.ts';
import { ExecutionStatus, PkDownloader, VerifyStatus, VmConfigMetadata } from './client-replay/shapes.ts';
import { GUESTS, startStack, type Stack } from './stack.ts';

let stack: Stack;
let sdk: ReplayClient;

beforeAll(async () => {
  stack = await startStack();
  // The client's ~/.axiom/config.json after `cargo axiom register --api-url {base}/v1`, with
  // the config id a user of this service is given.
  sdk = new ReplayClient(`${stack.url}/v1`, stack.apiKey, stack.devConfig);
  await stack.startAgent({ name: 'client-replay' });
});
afterAll(async () => stack?.stop());

// ---------------------------------------------------------------------------
// Shared fixtures, each made once on first use (so any single test also runs alone).

const once = <T>(make: () => Promise<T>) => {
  let p: Promise<T> | undefined;
  return () => (p ??= make());
};

const elfOf = (guest: string) => readFile(join(GUESTS, guest)).then((b) => new Uint8Array(b));
const vmexeOf = (guest: string) => new TextEncoder().encode(`vmexe of ${guest} (client replay)`);

/** `--input <hex>` → Input::HexBytes → `{"input": ["0x01…"]}` (v2.0.0:crates/sdk/src/input.rs:45-53). */
const bytesInput = (text: string) => ({ input: ['0x01' + Buffer.from(text).toString('hex')] });
/** loop.elf's u32 iteration count as a 4-byte `01` entry. */
const loopInput = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return { input: ['0x01' + b.toString('hex')] };
};

/** `cargo axiom upload-exe` of a committed guest, then its wait loop to `ready`. */
async function uploadReady(guest: string, extra: { program_name?: string } = {}): Promise<string> {
  const { id } = await sdk.uploadExe(await elfOf(guest), vmexeOf(guest), { config_id: stack.devConfig, ...extra });
  await sdk.waitForBuildCompletion(id);
  return id;
}

const hello = once(() => uploadReady('hello.elf', { program_name: 'replay hello' }));
const loop = once(() => uploadReady('loop.elf'));
const panics = once(() => uploadReady('panic.elf'));

/** A Succeeded proof of `hello` with the proof file the client saved. */
async function proveAndSave(proofType: 'stark' | 'evm', text: string) {
  const program = await hello();
  const { id } = await sdk.generateNewProof({ program_id: program, proof_type: proofType, input: bytesInput(text) });
  const done = await sdk.waitForProofCompletion(id, true);
  return { program, id, status: done.status, file: done.proof!.text, logs: done.logs!.text };
}
const starkProof = once(() => proveAndSave('stark', 'a child proof'));
const evmProof = once(() => proveAndSave('evm', 'an evm proof'));

const pureExecution = once(async () => {
  const { id } = await sdk.executeProgram(await hello(), 'pure', bytesInput('abc'));
  return { id, record: await settledExecution(id) };
});

/** A config of this service with nothing published for it (keys, evm_verifier). */
const bareConfig = once(async () => {
  const step = createConfig({
    openvm_version: '2.0.0',
    stark_backend_version: '2.0.0',
    app_vm_commit: '0x' + '3c'.repeat(32),
    engine: 'dev',
    deferral_enabled: false,
  });
  await stack.sql(step.sql.join('\n'));
  return step.output[step.output.length - 1];
});

/** A config whose engine no agent of the stack runs: its programs stay `not_ready`. */
const unservedConfig = once(async () => {
  const step = createConfig({
    openvm_version: '2.0.0',
    stark_backend_version: '2.0.0',
    app_vm_commit: '0x' + '4d'.repeat(32),
    engine: 'openvm',
    deferral_enabled: false,
  });
  await stack.sql(step.sql.join('\n'));
  return step.output[step.output.length - 1];
});

const KEY_TYPES = ['app_pk', 'agg_pk', 'halo2_pk', 'app_vk', 'agg_vk'] as const; // v2.0.0:crates/cli/src/commands/config.rs:40-46
const keyFile = (name: string) =>
  new Uint8Array(Buffer.concat([Buffer.from(`${name} of the dev config\n`), Buffer.alloc(4096, name.length)]));

/**
 * The operator's publishing step for the dev config, as `prover-agent setup-config
 * --publish` does it: an upload in parts with the publisher token, declaring the
 * file's SHA-256 (prover-agent/src/protocol.ts, PUBLISHED_KEY_NAMES).
 */
const publishDevKeys = once(async () => {
  const agent = (path: string, init: RequestInit) =>
    fetch(`${stack.url}/internal/v1/configs/${stack.devConfig}/keys/${path}`, {
      ...init,
      headers: { authorization: `Bearer ${stack.publisherToken}`, ...(init.headers as Record<string, string>) },
    });
  for (const name of [...KEY_TYPES, 'evm_verifier']) {
    const sha256 = createHash('sha256').update(keyFile(name)).digest('hex');
    const started = await agent(`${name}/uploads`, {
      method: 'POST',
      body: JSON.stringify({ sha256 }),
      headers: { 'content-type': 'application/json' },
    });
    expect(started.status, `publishing ${name}: ${await started.clone().text()}`).toBe(201);
    const { upload_id } = (await started.json()) as { upload_id: string };
    const body = keyFile(name);
    const part = (await (
      await agent(`${name}/uploads/${upload_id}/1`, { method: 'PUT', body, headers: { 'content-length': String(body.length) } })
    ).json()) as object;
    const done = await agent(`${name}/uploads/${upload_id}/complete`, {
      method: 'POST',
      body: JSON.stringify({ parts: [part] }),
      headers: { 'content-type': 'application/json' },
    });
    expect(done.status, `publishing ${name}: ${await done.clone().text()}`).toBe(200);
  }
});

/** An execution's record once it has finished (terminated_at set), read without the client's shape check. */
async function settledExecution(id: string): Promise<any> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const r = await sdk.send('GET', `${sdk.api}/executions/${id}`);
    const rec = parseJson(r) as any;
    if (rec.terminated_at) return rec;
    if (Date.now() > deadline) throw new Error(`execution ${id} never finished: ${r.text}`);
    await new Promise((res) => setTimeout(res, 150));
  }
}

/** `{detail}` of an error answer (a string, or the 422 list). */
const detailOf = (r: Reply): string => {
  try {
    const d = (JSON.parse(r.text) as { detail?: unknown }).detail;
    return typeof d === 'string' ? d : JSON.stringify(d);
  } catch {
    return r.text;
  }
};

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

// ---------------------------------------------------------------------------

describe('register', () => {
  it('register: GET /validate_api_key says valid for our key and 4xx for a bad one; the version header is not required', async () => {
    expect(await sdk.validateApiKey(stack.apiKey)).toBe('valid');
    expect(await sdk.validateApiKey('sk_not_a_key_of_this_service')).toBe('invalid');
    // The client-version header is informational (client-conventions.md): a request without it works.
    const bare = await fetch(`${stack.url}/v1/validate_api_key`, { headers: { 'Service-API-Key': stack.apiKey } });
    expect(bare.status).toBe(200);
  });
});

describe('upload-exe / build', () => {
  it('upload-exe: POST /programs?config_id&project_name&program_name&default_num_gpus with parts elf + vmexe, then build status and the wait loop', async () => {
    const projectName = `replay project ${Date.now()}`;
    const programName = 'hello, from the replayed client';
    const elf = await elfOf('hello.elf');
    const { id } = await sdk.uploadExe(elf, vmexeOf('hello.elf'), {
      config_id: stack.devConfig,
      project_name: projectName,
      program_name: programName,
      default_num_gpus: 2,
    });
    // upload_exe.rs:65 reads the status right away (for the console URL), then waits (upload_exe.rs:76-77).
    const first = await sdk.getBuildStatus(id);
    expect(first).toMatchObject({ id, config_uuid: stack.devConfig, name: programName, project_name: projectName, default_num_gpus: 2 });
    const ready = await sdk.waitForBuildCompletion(id);
    expect(ready).toMatchObject({ id, status: 'ready' });
  });

  it('build (no subcommand): the same upload with the cached project id (.axiom/project-id) and no project_name', async () => {
    // v2.0.0:crates/cli/src/commands/build.rs:150-185: a cached project id is sent as project_id.
    const projectId = (await sdk.getBuildStatus(await hello())).project_id;
    const { id } = await sdk.uploadExe(await elfOf('hello.elf'), vmexeOf('hello.elf'), {
      config_id: stack.devConfig,
      project_id: projectId,
    });
    expect((await sdk.getBuildStatus(id)).project_id).toBe(projectId); // build.rs:188
    expect((await sdk.waitForBuildCompletion(id)).status).toBe('ready'); // build.rs:216-217
  });

  it('build status [--wait]: GET /programs/{id} as BuildStatus; --wait ends on ready', async () => {
    // v2.0.0:crates/cli/src/commands/build.rs:95-103
    const id = await hello();
    const s = await sdk.getBuildStatus(id);
    expect(s).toMatchObject({ id, status: 'ready', config_uuid: stack.devConfig, name: 'replay hello' });
    expect((await sdk.waitForBuildCompletion(id)).status).toBe('ready');
  });

  it('build list: GET /programs?page=1&page_size=20 as build::ProgramListResponse', async () => {
    // v2.0.0:crates/cli/src/commands/build.rs:104-105 (defaults 1 and 20, build.rs:42-46)
    const id = await hello();
    const list = await sdk.listPrograms();
    expect(list.pagination).toMatchObject({ page: 1, page_size: 20 });
    expect(list.items.map((p: any) => p.id)).toContain(id);
  });

  it('build download --artifact exe | elf | source | app_exe_commit | all', async () => {
    // v2.0.0:crates/cli/src/commands/build.rs:143-146, artifact values build.rs:56
    const id = await hello();
    // Each artifact is checked on its own (soft), so one wrong answer does not hide the others.
    const exe = await sdk.downloadProgramArtifact(id, 'exe');
    expect.soft(exe.status, exe.text).toBe(200);
    expect.soft(hex(exe.bytes)).toBe(hex(vmexeOf('hello.elf')));
    const elf = await sdk.downloadProgramArtifact(id, 'elf');
    expect.soft(elf.status, elf.text).toBe(200);
    expect.soft(hex(elf.bytes)).toBe(hex(await elfOf('hello.elf')));

    // A pre-built program has no source: a 404 that says so (the client reports a client error).
    const source = await sdk.downloadProgramArtifact(id, 'source');
    expect.soft(source.status, source.text).toBe(404);
    expect.soft(detailOf(source)).toMatch(/source/i);

    // Saved as program.app_exe_commit; the SDK's get_app_exe_commit hex-decodes the trimmed text (no 0x).
    const commit = await sdk.downloadProgramArtifact(id, 'app_exe_commit');
    expect.soft(commit.status, commit.text).toBe(200);
    expect.soft(commit.text.trim(), 'app_exe_commit as bare hex').toMatch(/^[0-9a-fA-F]{64}$/);
    await expect.soft(sdk.getAppExeCommit(id).then((b) => b.length)).resolves.toBe(32);

    // `all` asks for each in turn; only `source` may fail (a warning), the rest must download.
    const all = await sdk.downloadProgramAll(id);
    expect(Object.fromEntries(Object.entries(all).map(([k, r]) => [k, r.status]))).toEqual({
      exe: 200,
      elf: 200,
      source: 404,
      app_exe_commit: 200,
    });
  });
});

describe('projects', () => {
  it('projects create NAME: POST /projects with the name as a JSON string body', async () => {
    // v2.0.0:crates/cli/src/commands/projects.rs:106-107
    const name = `replay created ${Date.now()}`;
    const { id } = await sdk.createProject(name);
    expect((await sdk.getProject(id)).name).toBe(name);
  });

  it('projects list: GET /projects?page=1&page_size=20 as ProjectListResponse', async () => {
    // v2.0.0:crates/cli/src/commands/projects.rs:66-67
    const { id } = await sdk.createProject(`replay listed ${Date.now()}`);
    const list = await sdk.listProjects();
    expect(list.pagination).toMatchObject({ page: 1, page_size: 20 });
    expect(list.items.map((p: any) => p.id)).toContain(id);
  });

  it('projects show --project-id: GET /projects/{id} as ProjectResponse', async () => {
    // v2.0.0:crates/cli/src/commands/projects.rs:113-114
    const project = (await sdk.getBuildStatus(await hello())).project_id;
    const p = await sdk.getProject(project);
    expect(p.id).toBe(project);
    expect(p.program_count).toBeGreaterThanOrEqual(1);
  });

  it('projects programs --project-id: GET /programs?project_id=…&page=1&page_size=20 as projects::ProgramListResponse', async () => {
    // v2.0.0:crates/cli/src/commands/projects.rs:132-138
    const id = await hello();
    const project = (await sdk.getBuildStatus(id)).project_id;
    const list = await sdk.listProjectPrograms(project);
    expect(list.items.map((p: any) => p.id)).toContain(id);
    for (const p of list.items) expect(p.project_id).toBe(project);
  });

  it('projects move --program-id --to-project: PUT /programs/{id} with {"project_id"}', async () => {
    // v2.0.0:crates/cli/src/commands/projects.rs:163-167
    const { id: program } = await sdk.uploadExe(await elfOf('hello.elf'), vmexeOf('hello.elf'), {
      config_id: stack.devConfig,
      program_name: 'to be moved',
    });
    const { id: target } = await sdk.createProject(`replay move target ${Date.now()}`);
    await sdk.moveProgramToProject(program, target);
    expect((await sdk.getBuildStatus(program)).project_id).toBe(target);
    expect((await sdk.listProjectPrograms(target)).items.map((p: any) => p.id)).toEqual([program]);
  });
});

describe('config', () => {
  it('config status [--config-id]: GET /configs/{id} as VmConfigMetadata; ids are case-insensitive; unknown ids are 404', async () => {
    // v2.0.0:crates/cli/src/commands/config.rs:68-72
    const meta = await sdk.getVmConfigMetadata(stack.devConfig);
    expect(meta).toMatchObject({
      id: stack.devConfig,
      active: true,
      openvm_version: TARGET_RELEASE.openvm_version,
      stark_backend_version: TARGET_RELEASE.stark_backend_version,
    });
    // The reference's ids are lowercase ULIDs (v2.0.0:crates/sdk/src/lib.rs:67): ours in lowercase find the same config.
    const lower = await sdk.getVmConfigMetadataReply(stack.devConfig.toLowerCase());
    expect.soft(lower.status, lower.text).toBe(200);
    if (lower.ok) {
      const rec = parseJson(lower) as any;
      expectShape(rec, VmConfigMetadata, 'VmConfigMetadata');
      expect.soft(rec.id.toLowerCase()).toBe(stack.devConfig.toLowerCase());
      expect.soft(rec.app_vm_commit).toBe(meta.app_vm_commit);
    }
    // The client's default config id (a fresh `register` saves it) is well-formed but unknown here: 404, not 422.
    const unknown = await sdk.getVmConfigMetadataReply(REFERENCE_DEFAULT_CONFIG_ID);
    expect.soft(unknown.status, unknown.text).toBe(404);
  });

  it('config download [--evm-verifier] (and the SDK’s app_vm_commit): GET /configs/{id}/config | evm_verifier | app_vm_commit', async () => {
    // v2.0.0:crates/cli/src/commands/config.rs:73-99 (config.toml or evm_verifier.json), SDK get_vm_commitment
    const config = await sdk.downloadConfigArtifact('config');
    expect.soft(config.status, config.text).toBe(200);
    expect.soft(config.bytes.length).toBeGreaterThan(0);

    const vmCommit = await sdk.downloadConfigArtifact('app_vm_commit');
    expect.soft(vmCommit.status, vmCommit.text).toBe(200);
    const record = await sdk.getVmConfigMetadata();
    expect.soft(vmCommit.text.trim().replace(/^0x/, '')).toBe(record.app_vm_commit.replace(/^0x/, ''));

    // evm_verifier is a file the operator publishes: 404 naming it before, the file after.
    const missing = await sdk.downloadConfigArtifact('evm_verifier', await bareConfig());
    expect.soft(missing.status, missing.text).toBe(404);
    expect.soft(detailOf(missing)).toMatch(/evm[ _]verifier/i);
    await publishDevKeys();
    const verifier = await sdk.downloadConfigArtifact('evm_verifier');
    expect.soft(verifier.status, verifier.text).toBe(200);
    expect.soft(hex(verifier.bytes)).toBe(hex(keyFile('evm_verifier')));
  });

  it('config download-keys --type app_pk | agg_pk | halo2_pk | app_vk | agg_vk: {download_url}, then a plain GET of it', async () => {
    // v2.0.0:crates/cli/src/commands/config.rs:100-119
    const bare = await bareConfig();
    for (const type of KEY_TYPES) {
      const r = await sdk.getProvingKeysReply(type, bare);
      expect.soft(r.status, `${type} of a config without published keys: ${r.text}`).toBe(404);
      const [part, pv] = type.split('_') as [string, string];
      const spelled = new RegExp(`${type}|${part}[ _-]?(${pv}|${pv === 'pk' ? 'proving' : 'verifying'} key)`, 'i');
      expect.soft(detailOf(r), `the 404 for ${type} names the key`).toMatch(spelled);
    }

    await publishDevKeys();
    for (const type of KEY_TYPES) {
      const r = await sdk.getProvingKeysReply(type);
      expect.soft(r.status, `${type} once published: ${r.text}`).toBe(200);
      if (!r.ok) continue;
      const { download_url } = parseJson(r) as { download_url: string };
      expectShape({ download_url }, PkDownloader, 'PkDownloader');
      // The client GETs it with a bare reqwest client: no API key, no version header.
      const file = await sdk.downloadPk(download_url);
      expect.soft(file.status, `${type}: GET ${download_url}: ${file.text.slice(0, 200)}`).toBe(200);
      expect.soft(hex(file.bytes)).toBe(hex(keyFile(type)));
      // Keys are gigabytes: the URL serves byte ranges.
      const range = await sdk.downloadPk(download_url, { Range: 'bytes=2-9' });
      expect.soft(range.status, `${type}: ranged GET`).toBe(206);
      expect.soft(hex(range.bytes)).toBe(hex(keyFile(type).subarray(2, 10)));
    }
  });
});

describe('prove', () => {
  it('prove --program-id --input <hex> --num-gpus --priority: JSON body; the wait loop ends on Succeeded and saves the proof and logs', async () => {
    // v2.0.0:crates/cli/src/commands/prove.rs:229-251
    const program = await hello();
    const { id } = await sdk.generateNewProof({ program_id: program, input: bytesInput('replayed prove'), num_gpus: 1, priority: 7 });
    const done = await sdk.waitForProofCompletion(id, true);
    expect(done.status).toMatchObject({ id, state: 'Succeeded', proof_type: 'stark', program_uuid: program, num_gpus: 1, priority: 7 });
    const file = parseJson(done.proof!) as StarkProofJson;
    expect(file).toMatchObject({ version: expect.any(String), proof: expect.any(String), user_pvs_proof: expect.any(String) });
    expect(done.logs!.text.length).toBeGreaterThan(0);
  });

  it('prove --type evm: the saved evm-proof.json has the fields verify evm checks', async () => {
    const { status, file } = await evmProof();
    expect(status).toMatchObject({ state: 'Succeeded', proof_type: 'evm' });
    const doc = JSON.parse(file) as Record<string, any>;
    for (const f of ['version', 'user_public_values', 'app_exe_commit', 'app_vm_commit']) expect(doc).toHaveProperty(f);
    expect(doc.proof_data).toMatchObject({ accumulator: expect.any(String), proof: expect.any(String) });
  });

  it('prove --deferred-proof FILE: multipart text `input` + `child_proofs` parts in the zkVM’s binary codec', async () => {
    // v2.0.0:crates/cli/src/commands/prove.rs:127-128 (the flag), crates/sdk/src/prove.rs:261-291 (the request)
    const child = await starkProof();
    const doc = JSON.parse(child.file) as StarkProofJson;
    const bytes = encodeVersionedStarkProof(doc);
    // The helper's own check, first on a tiny proof whose bytes are known: u32-LE length + "v2.0",
    // u32-LE length + proof bytes, u32-LE length + user_pvs_proof bytes, then the Option byte.
    expect(hex(encodeVersionedStarkProof({ version: 'v2.0', proof: '0xabcd', user_pvs_proof: '01', deferral_merkle_proofs: null }))).toBe(
      '04000000' + '76322e30' + '02000000' + 'abcd' + '01000000' + '01' + '00',
    );
    expect(hex(encodeVersionedStarkProof({ version: 'v2.0', proof: '', user_pvs_proof: '', deferral_merkle_proofs: '0xff' }))).toBe(
      '04000000' + '76322e30' + '00000000' + '00000000' + '01' + '01000000' + 'ff',
    );
    // Then on the real child: the bytes read back to the same fields, and do not look like JSON to the client.
    const back = decodeVersionedStarkProof(bytes);
    expect(back.version).toBe(doc.version);
    expect(back.proof).toBe(doc.proof.replace(/^0x/, '').toLowerCase());
    expect(back.user_pvs_proof).toBe(doc.user_pvs_proof.replace(/^0x/, '').toLowerCase());
    expect(bytes[0]).not.toBe('{'.charCodeAt(0));

    const { id } = await sdk.generateNewProof({
      program_id: child.program,
      input: bytesInput('parent'),
      deferred: [{ filename: 'child.bin', bytes }],
    });
    const done = await sdk.waitForProofCompletion(id, true);
    expect(done.status).toMatchObject({ id, state: 'Succeeded' });
    expect(done.status.num_deferred_proofs).toBe(1); // our field: the child was folded in
  });

  it('prove status --proof-id [--wait]: GET /proofs/{id} as ProofStatus; --wait ends on Succeeded', async () => {
    // v2.0.0:crates/cli/src/commands/prove.rs:138-150
    const { id, program } = await starkProof();
    expect(await sdk.getProofStatus(id)).toMatchObject({ id, state: 'Succeeded', program_uuid: program, proof_type: 'stark' });
    // --wait saves the proof and the logs unless --no-save (v2.0.0:crates/cli/src/commands/prove.rs:143-144 → crates/sdk/src/prove.rs:360-410).
    const waited = await sdk.waitForProofCompletion(id, true);
    expect(waited.status.state).toBe('Succeeded');
    expect(waited.proof!.status).toBe(200);
    expect(waited.logs!.status).toBe(200);
  });

  it('prove list --program-id: GET /proofs?program_id=…&page=1&page_size=20 as ProofListResponse', async () => {
    // v2.0.0:crates/cli/src/commands/prove.rs:177-182
    const { id, program } = await starkProof();
    const list = await sdk.listProofs(program);
    expect(list.pagination).toMatchObject({ page: 1, page_size: 20 });
    expect(list.items.map((p: any) => p.id)).toContain(id);
  });

  it('prove download --proof-id --type stark | evm: GET /proofs/{id}/proof/{type}', async () => {
    // v2.0.0:crates/cli/src/commands/prove.rs:151-175: the status first (for the path), then the file.
    for (const made of [await starkProof(), await evmProof()]) {
      const s = await sdk.getProofStatus(made.id);
      const r = await sdk.getGeneratedProof(made.id, s.proof_type);
      expect(r.text).toBe(made.file);
      expect(parseJson(r)).toHaveProperty('version');
    }
  });

  it('prove logs --proof-id: GET /proofs/{id}/logs names the proof id the user holds, not an internal job id', async () => {
    // v2.0.0:crates/cli/src/commands/prove.rs:176 → crates/sdk/src/prove.rs:114-139 (status first, then the logs)
    const { id } = await starkProof();
    await sdk.getProofStatus(id);
    const logs = (await sdk.getProofLogs(id)).text;
    expect(logs).toContain(id);
    // The finished job's log is compacted after its lease ended (src/jobs/logs.ts): the one read the client makes gets the same log whole.
    await expect.poll(async () => (await stack.sql(`SELECT log_store FROM jobs WHERE subject_id = '${id}'`))[0]?.log_store).toBe('clean');
    expect((await sdk.getProofLogs(id)).text).toBe(logs);
    const jobs = await stack.sql(`SELECT id FROM jobs WHERE subject_id = '${id}'`);
    expect(jobs.length).toBeGreaterThan(0);
    for (const j of jobs) expect(logs, 'the logs mention an internal job id').not.toContain(String(j.id));
  });

  it('prove cancel --proof-id: POST /proofs/{id}/cancel with {}, then the cancellation wait ends on Canceled', async () => {
    // v2.0.0:crates/cli/src/commands/prove.rs:221-227
    const { id } = await sdk.generateNewProof({ program_id: await loop(), input: loopInput(1_500_000_000) });
    const { message } = await sdk.cancelProof(id);
    expect(message.length).toBeGreaterThan(0);
    expect(await sdk.waitForProofCancellation(id)).toMatchObject({ id, state: 'Canceled' });
  });

  it('prove with an input the client would refuse, to a program not ready yet: 422 (validated before readiness, as the reference does)', async () => {
    const { id: program } = await sdk.uploadExe(await elfOf('hello.elf'), vmexeOf('hello.elf'), { config_id: await unservedConfig() });
    expect((await sdk.getBuildStatus(program)).status).not.toBe('ready');
    const r = await sdk.send('POST', `${sdk.api}/proofs?program_id=${program}&proof_type=stark`, {
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ input: ['0x03abcd'] }),
    });
    expect(r.status, r.text).toBe(422);
  });
});

describe('run', () => {
  for (const mode of ['pure', 'meter', 'segment'] as const) {
    it(`run --program-id --input <hex> --mode ${mode}: POST /executions?program_id&mode; the wait loop ends on Succeeded`, async () => {
      // v2.0.0:crates/cli/src/commands/run.rs:133-153, modes run.rs:64
      const program = await hello();
      const { id } = await sdk.executeProgram(program, mode, bytesInput(`run ${mode}`));
      await expect
        .soft(sdk.waitForExecutionCompletion(id))
        .resolves.toMatchObject({ id, status: 'Succeeded', mode, program_uuid: program });
      // The finished record, read without the client's loop so its fields are checked even when the loop is not satisfied.
      const s = await settledExecution(id);
      expect.soft(s.public_values).not.toBeNull();
      expect.soft(JSON.stringify(s.public_values)).toContain(Buffer.from(await sha256(`run ${mode}`)).toString('hex'));
      if (mode !== 'pure') expect.soft(s.total_cycle).toBeGreaterThan(0);
      if (mode === 'segment') {
        expect.soft(s.num_segments, 'segment mode reports num_segments').toEqual(expect.any(Number));
        if (typeof s.num_segments === 'number') expect.soft(s.num_segments).toBeGreaterThanOrEqual(1);
      }
    });
  }

  it('run (a guest that fails): the wait loop ends on Failed with the error; public_values is null', async () => {
    const { id } = await sdk.executeProgram(await panics(), 'pure');
    await expect.soft(sdk.waitForExecutionCompletion(id)).rejects.toThrow(/^Execution failed: ./);
    const s = await settledExecution(id);
    expect.soft(s.status).toBe('Failed');
    expect.soft(s.error_message).toEqual(expect.stringMatching(/./));
    expect.soft(s.public_values ?? null, 'a failed execution has no public values').toBeNull();
  });

  it('run status --execution-id [--wait]: GET /executions/{id} as ExecutionStatus', async () => {
    // v2.0.0:crates/cli/src/commands/run.rs:79-87
    const { id } = await pureExecution();
    const s = await sdk.getExecutionStatus(id);
    expectShape(s, ExecutionStatus, 'ExecutionStatus');
    expect(s).toMatchObject({ id, status: 'Succeeded', mode: 'pure' });
    expect((await sdk.waitForExecutionCompletion(id)).status).toBe('Succeeded');
  });

  it('run list --program-id: GET /executions?program_id=…&page=1&page_size=20 as ExecutionListResponse', async () => {
    // v2.0.0:crates/cli/src/commands/run.rs:88-93
    const { id } = await pureExecution();
    const list = await sdk.listExecutions(await hello());
    expect(list.pagination).toMatchObject({ page: 1, page_size: 20 });
    expect(list.items.map((e: any) => e.id)).toContain(id);
  });

  it('run logs --execution-id: GET /executions/{id}/logs', async () => {
    // v2.0.0:crates/cli/src/commands/run.rs:132
    const { id } = await pureExecution();
    expect((await sdk.getExecutionLogs(id)).text).toMatch(/read 3 bytes/);
  });
});

describe('verify', () => {
  it('verify stark --program-id --proof FILE: multipart `proof` (every 0x removed) to /verify/stark; the wait loop reads /verify/{id}', async () => {
    // v2.0.0:crates/cli/src/commands/verify.rs:83-101
    const { program, file } = await starkProof();
    const { id } = await sdk.verifyStark(program, file);
    expect(await sdk.waitForVerification(id)).toMatchObject({ id, result: 'verified' });

    const doc = JSON.parse(file) as StarkProofJson;
    const flip = (h: string) => h.slice(0, -1) + (h.endsWith('0') ? '1' : '0');
    const { id: bad } = await sdk.verifyStark(program, JSON.stringify({ ...doc, user_pvs_proof: flip(doc.user_pvs_proof) }));
    await expect(sdk.waitForVerification(bad)).rejects.toThrow('Proof verification failed');
  });

  it('verify evm --config-id --proof FILE: config metadata, then multipart `proof` (every 0x removed) to /verify?config_id; the wait loop reads /verify/{id}', async () => {
    // v2.0.0:crates/cli/src/commands/verify.rs:64-82
    const { file } = await evmProof();
    expect(file).toContain('0x'); // the downloaded file has 0x prefixes; the client strips them all
    const { id, metadata } = await sdk.verifyEvm(stack.devConfig, file);
    expect(metadata.id).toBe(stack.devConfig);
    expect(await sdk.waitForVerification(id)).toMatchObject({ id, result: 'verified' });
  });

  it('verify status --verify-id [--wait]: GET /verify/{id} as VerifyStatus', async () => {
    // v2.0.0:crates/cli/src/commands/verify.rs:102-110
    const { program, file } = await starkProof();
    const { id } = await sdk.verifyStark(program, file);
    expectShape(await sdk.getVerificationResult(id), VerifyStatus, 'VerifyStatus');
    const done = await sdk.waitForVerification(id);
    expect(done).toMatchObject({ id, result: 'verified', proof_type: expect.any(String) });
  });
});

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
}
