// A replay of the published client's SDK (axiom-crypto/axiom-api-cli, tag v2.0.0,
// `crates/sdk/src/*.rs`): each method sends the request the SDK function of the same
// name builds, byte for byte where it matters (method, URL with its query pairs in the
// order the SDK appends them, headers, multipart part names, file names and content
// types, body), and handles the answer as the SDK does (2xx or an error, then serde
// into the struct of `shapes.ts`). The polling loops keep the client's termination
// conditions but poll every 150 ms instead of its 10 s.
//
// Modelled in our own words; `v2.0.0:<path>:<line>` cites the client's source. One
// substitution only: `api` is our local stack's `{base}/v1`. The API key goes in the
// client's own header, `Axiom-API-Key`, as the unmodified client sends it.
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import {
  BuildList,
  BuildStatus,
  ExecutionList,
  ExecutionStatus,
  IdBody,
  PkDownloader,
  ProjectCreateResponse,
  ProjectList,
  ProjectProgramList,
  ProjectResponse,
  ProofList,
  ProofStatus,
  shapeErrors,
  VerifyStatus,
  VmConfigMetadata,
  type Shape,
} from './shapes.ts';

/** The client's API key header, v2.0.0:crates/sdk/src/lib.rs:25. */
export const API_KEY_HEADER = 'Axiom-API-Key';
/** v2.0.0:crates/sdk/src/lib.rs:26. */
export const CLI_VERSION_HEADER = 'Axiom-CLI-Version';
/**
 * The value the CLI puts there: `env!("CARGO_PKG_VERSION")` (v2.0.0:crates/cli/src/main.rs:142),
 * the workspace version (v2.0.0:crates/cli/Cargo.toml:4 → v2.0.0:Cargo.toml:2), which is 1.4.0 at the v2.0.0 tag.
 */
export const CLI_VERSION = '1.4.0';
/** v2.0.0:crates/sdk/src/lib.rs:67: the reference's default config id (lowercase ULID). */
export const REFERENCE_DEFAULT_CONFIG_ID = 'cfg_01k3w1spnpnxzry017g5jzcy97';

const POLL_MS = 150;

export interface Reply {
  status: number;
  ok: boolean;
  headers: Headers;
  bytes: Uint8Array;
  text: string;
  /** What was sent, for assertion messages. */
  request: string;
}

/** serde_json::from_str of the body: throws like the client would on a non-JSON 2xx body. */
export function parseJson(r: Reply): unknown {
  try {
    return JSON.parse(r.text);
  } catch {
    throw new Error(`${r.request}: 2xx body is not JSON (serde would fail): ${r.text.slice(0, 200)}`);
  }
}

/** The client's handling of a non-2xx answer (v2.0.0:crates/sdk/src/lib.rs:461-490): 4xx → "Client error (status): body". */
export function clientError(r: Reply): Error {
  if (r.status >= 400 && r.status < 500) return new Error(`${r.request}: Client error (${r.status}): ${r.text}`);
  return new Error(`${r.request}: Request failed with status: ${r.status} ${r.text.slice(0, 300)}`);
}

/** Asserts a value deserializes into the client's struct (serde semantics, see shapes.ts). */
export function expectShape(value: unknown, shape: Shape, what: string): void {
  expect(shapeErrors(value, shape, what), `${what} does not deserialize into the client's struct: ${JSON.stringify(value)}`).toEqual([]);
}

/** `handle_json_response` + serde into T: 2xx, a JSON body, and the struct's shape. */
function json<T = any>(r: Reply, shape: Shape, what: string): T {
  if (!r.ok) throw clientError(r);
  const v = parseJson(r);
  expectShape(v, shape, what);
  return v as T;
}

// ---------------------------------------------------------------------------
// multipart/form-data as reqwest's blocking `multipart::Form` writes it

export interface Part {
  name: string;
  data: Uint8Array | string;
  /** `Part::file_name(...)`; absent for `Form::text` fields. */
  filename?: string;
  /** `Part::mime_str(...)`; reqwest writes no Content-Type for a text field without one. */
  contentType?: string;
}

/**
 * Encodes parts the way reqwest does: a boundary of four 16-hex-digit groups, then per
 * part `--boundary`, `Content-Disposition: form-data; name="…"[; filename="…"]`, an
 * optional `Content-Type`, a blank line, the bytes, CRLF; closed by `--boundary--`.
 */
export function multipart(parts: Part[]): { contentType: string; body: Uint8Array } {
  const boundary = [0, 1, 2, 3].map(() => randomBytes(8).toString('hex')).join('-');
  const chunks: Buffer[] = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    if (p.contentType !== undefined) head += `\r\nContent-Type: ${p.contentType}`;
    chunks.push(Buffer.from(head + '\r\n\r\n'), Buffer.from(p.data), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { contentType: `multipart/form-data; boundary=${boundary}`, body: Buffer.concat(chunks) };
}

/**
 * `url::form_urlencoded::byte_serialize`, as the SDK uses for project_name and
 * program_name (v2.0.0:crates/sdk/src/build.rs:942-949): application/x-www-form-urlencoded,
 * so a space becomes `+`.
 */
export function formUrlEncode(s: string): string {
  return new URLSearchParams({ x: s }).toString().slice(2);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------

export interface UploadExeArgs {
  config_id: string;
  project_id?: string;
  project_name?: string;
  program_name?: string;
  default_num_gpus?: number;
}

export interface ProveArgs {
  program_id: string;
  /** The JSON body `{"input": [...]}`; the client sends `{"input": []}` when no input is given. */
  input?: { input: string[] };
  proof_type?: 'stark' | 'evm';
  num_gpus?: number;
  priority?: number;
  /** Deferred child proofs: file name and the codec bytes read from it. */
  deferred?: { filename: string; bytes: Uint8Array }[];
}

export class ReplayClient {
  /** Every request sent, as "METHOD url", for the test's record. */
  readonly sent: string[] = [];

  /** `config.api_url`, which includes `/v1` (v2.0.0:crates/sdk/src/lib.rs:245). */
  readonly api: string;
  readonly apiKey: string;
  /** The config id saved in ~/.axiom/config.json (`config.config_id`). */
  readonly configId: string;

  constructor(api: string, apiKey: string, configId: string) {
    this.api = api;
    this.apiKey = apiKey;
    this.configId = configId;
  }

  /**
   * `authenticated_get/post/put` (v2.0.0:crates/sdk/src/lib.rs:377-396) and every hand-built
   * request: `add_cli_version_header` (lib.rs:366-371) then the API key header.
   */
  private authHeaders(extra: Record<string, string> = {}): Record<string, string> {
    return { [CLI_VERSION_HEADER]: CLI_VERSION, [API_KEY_HEADER]: this.apiKey, ...extra };
  }

  async send(
    method: string,
    url: string,
    init: { headers?: Record<string, string>; body?: Uint8Array | string; auth?: boolean } = {},
  ): Promise<Reply> {
    const headers = init.auth === false ? { ...init.headers } : this.authHeaders(init.headers);
    const request = `${method} ${url}`;
    this.sent.push(request);
    const res = await fetch(url, { method, headers, body: init.body as BodyInit | undefined });
    const bytes = new Uint8Array(await res.arrayBuffer());
    return { status: res.status, ok: res.ok, headers: res.headers, bytes, text: new TextDecoder().decode(bytes), request };
  }

  // ---------------------------------------------------------------- lib.rs

  /**
   * `validate_api_key` (v2.0.0:crates/sdk/src/lib.rs:343-364), run by `cargo axiom register`
   * (v2.0.0:crates/cli/src/commands/register.rs:55): GET {api}/validate_api_key with the version
   * header and the key it was given; 2xx valid, 4xx "not valid or inactive", else a server error.
   */
  async validateApiKey(apiKey: string): Promise<'valid' | 'invalid' | 'server-error'> {
    const url = `${this.api}/validate_api_key`; // lib.rs:345
    const r = await this.send('GET', url, { auth: false, headers: { [CLI_VERSION_HEADER]: CLI_VERSION, [API_KEY_HEADER]: apiKey } }); // lib.rs:347-349
    if (r.ok) return 'valid'; // lib.rs:351-353
    if (r.status >= 400 && r.status < 500) return 'invalid'; // lib.rs:354-356
    return 'server-error'; // lib.rs:357-362
  }

  // ---------------------------------------------------------------- build.rs

  /**
   * `upload_exe_raw_base` (v2.0.0:crates/sdk/src/build.rs:918-1008), reached from
   * `cargo axiom upload-exe` (v2.0.0:crates/cli/src/commands/upload_exe.rs:62) and from a bare
   * `cargo axiom build` (v2.0.0:crates/cli/src/commands/build.rs:177-185).
   */
  async uploadExe(elf: Uint8Array, vmexe: Uint8Array, args: UploadExeArgs): Promise<{ id: string; reply: Reply }> {
    let url = `${this.api}/programs?config_id=${args.config_id}`; // build.rs:926-930, 936
    if (args.project_id !== undefined) url += `&project_id=${args.project_id}`; // build.rs:938-940
    if (args.project_name !== undefined) url += `&project_name=${formUrlEncode(args.project_name)}`; // build.rs:941-945
    if (args.program_name !== undefined) url += `&program_name=${formUrlEncode(args.program_name)}`; // build.rs:946-950
    if (args.default_num_gpus !== undefined) url += `&default_num_gpus=${args.default_num_gpus}`; // build.rs:951-953
    // build.rs:956-966: parts `elf` (program.elf) then `vmexe` (program.vmexe), both application/octet-stream.
    const form = multipart([
      { name: 'elf', data: elf, filename: 'program.elf', contentType: 'application/octet-stream' },
      { name: 'vmexe', data: vmexe, filename: 'program.vmexe', contentType: 'application/octet-stream' },
    ]);
    // build.rs:978-983: POST with the API key and the multipart body (reqwest sets its Content-Type).
    const r = await this.send('POST', url, { headers: { 'Content-Type': form.contentType }, body: form.body });
    // build.rs:989-997: 2xx, JSON, `body["id"].as_str()`.
    return { id: json(r, IdBody, 'upload-exe response').id, reply: r };
  }

  /** `get_build_status` (v2.0.0:crates/sdk/src/build.rs:240-247): GET {api}/programs/{id} into BuildStatus. */
  async getBuildStatus(programId: string): Promise<any> {
    const r = await this.send('GET', `${this.api}/programs/${programId}`); // build.rs:241-243
    return json(r, BuildStatus, 'BuildStatus');
  }

  /**
   * `wait_for_build_completion_base` (v2.0.0:crates/sdk/src/build.rs:386-476): GET the program
   * until `ready` (done, build.rs:404); `error` or `failed` end with "Build failed" (build.rs:452-458);
   * `processing`, `not_ready` and anything else poll (build.rs:459-473).
   */
  async waitForBuildCompletion(programId: string, timeoutMs = 45_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = await this.send('GET', `${this.api}/programs/${programId}`); // build.rs:396-401
      const s = json(r, BuildStatus, 'BuildStatus');
      if (s.status === 'ready') return s;
      if (s.status === 'error' || s.status === 'failed') throw new Error(`Build failed: ${s.error_message ?? 'Unknown error'}`);
      if (Date.now() > deadline) throw new Error(`the client would still be polling program ${programId}: status '${s.status}'`);
      await sleep(POLL_MS);
    }
  }

  /** `list_programs` (v2.0.0:crates/sdk/src/build.rs:224-238): GET {api}/programs?page=&page_size= (defaults 1 and 20). */
  async listPrograms(page = 1, pageSize = 20): Promise<any> {
    const r = await this.send('GET', `${this.api}/programs?page=${page}&page_size=${pageSize}`); // build.rs:229-236
    return json(r, BuildList, 'build::ProgramListResponse');
  }

  /**
   * `download_program` for one artifact (v2.0.0:crates/sdk/src/build.rs:276-357): GET
   * {api}/programs/{id}/download/{type} with the version and key headers (build.rs:287);
   * 2xx streams the body to `program.{ext}` (build.rs:293-335), 4xx is an error (build.rs:336-343).
   */
  async downloadProgramArtifact(programId: string, artifact: string): Promise<Reply> {
    return this.send('GET', `${this.api}/programs/${programId}/download/${artifact}`); // build.rs:276-289
  }

  /**
   * `download_program(.., "all")` (v2.0.0:crates/sdk/src/build.rs:263-274): each of exe, elf,
   * source, app_exe_commit in turn; a failure is reported as a warning and the command still succeeds.
   */
  async downloadProgramAll(programId: string): Promise<Record<string, Reply>> {
    const out: Record<string, Reply> = {};
    for (const a of ['exe', 'elf', 'source', 'app_exe_commit']) out[a] = await this.downloadProgramArtifact(programId, a); // build.rs:264-272
    return out;
  }

  /**
   * `get_app_exe_commit` (v2.0.0:crates/sdk/src/build.rs:249-259): GET .../download/app_exe_commit,
   * `error_for_status`, then `hex::decode(text.trim())`: bare hex, no `0x`.
   */
  async getAppExeCommit(programId: string): Promise<Uint8Array> {
    const r = await this.send('GET', `${this.api}/programs/${programId}/download/app_exe_commit`); // build.rs:250-256
    if (!r.ok) throw clientError(r);
    const t = r.text.trim(); // build.rs:258
    if (t.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(t))
      throw new Error(`Failed to decode app_exe_commit hex string: ${JSON.stringify(r.text)}`);
    return Uint8Array.from(Buffer.from(t, 'hex'));
  }

  // ---------------------------------------------------------------- projects.rs

  /** `list_projects` (v2.0.0:crates/sdk/src/projects.rs:77-91): GET {api}/projects?page=&page_size=. */
  async listProjects(page = 1, pageSize = 20): Promise<any> {
    const r = await this.send('GET', `${this.api}/projects?page=${page}&page_size=${pageSize}`); // projects.rs:82-89
    return json(r, ProjectList, 'ProjectListResponse');
  }

  /**
   * `create_project` (v2.0.0:crates/sdk/src/projects.rs:93-100): POST {api}/projects with
   * `Content-Type: application/json` and `.json(&name)`, i.e. the name as a JSON string.
   */
  async createProject(name: string): Promise<any> {
    const r = await this.send('POST', `${this.api}/projects`, {
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(name),
    }); // projects.rs:94-98
    return json(r, ProjectCreateResponse, 'ProjectCreateResponse');
  }

  /** `get_project` (v2.0.0:crates/sdk/src/projects.rs:102-107): GET {api}/projects/{id}. */
  async getProject(projectId: string): Promise<any> {
    const r = await this.send('GET', `${this.api}/projects/${projectId}`); // projects.rs:103-106
    return json(r, ProjectResponse, 'ProjectResponse');
  }

  /**
   * `list_project_programs` (v2.0.0:crates/sdk/src/projects.rs:109-124): the deprecated
   * GET {api}/programs?project_id=&page=&page_size=, read as projects::ProgramListResponse.
   */
  async listProjectPrograms(projectId: string, page = 1, pageSize = 20): Promise<any> {
    const r = await this.send('GET', `${this.api}/programs?project_id=${projectId}&page=${page}&page_size=${pageSize}`); // projects.rs:115-122
    return json(r, ProjectProgramList, 'projects::ProgramListResponse');
  }

  /**
   * `move_program_to_project` (v2.0.0:crates/sdk/src/projects.rs:126-136): PUT {api}/programs/{id}
   * with JSON `{"project_id": …}` (MoveProgramRequest, projects.rs:71-74); `send_request` only
   * looks at the status (v2.0.0:crates/sdk/src/lib.rs:453-459, 477-490).
   */
  async moveProgramToProject(programId: string, projectId: string): Promise<Reply> {
    const r = await this.send('PUT', `${this.api}/programs/${programId}`, {
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ project_id: projectId }),
    }); // projects.rs:127-134
    if (!r.ok) throw clientError(r);
    return r;
  }

  // ---------------------------------------------------------------- config.rs

  /** `get_vm_config_metadata` (v2.0.0:crates/sdk/src/config.rs:91-117): GET {api}/configs/{id} into VmConfigMetadata. */
  async getVmConfigMetadata(configId = this.configId): Promise<any> {
    const r = await this.send('GET', `${this.api}/configs/${configId}`); // config.rs:93, 99-101
    return json(r, VmConfigMetadata, 'VmConfigMetadata');
  }

  /** The raw answer of the same request, for the 404 cases. */
  async getVmConfigMetadataReply(configId: string): Promise<Reply> {
    return this.send('GET', `${this.api}/configs/${configId}`);
  }

  /**
   * `download_artifact` (v2.0.0:crates/sdk/src/config.rs:213-254), behind `download_config`
   * (`config`, config.rs:199-210), `get_evm_verifier` (`evm_verifier`, config.rs:173-184) and
   * `get_vm_commitment` (`app_vm_commit`, config.rs:186-197): GET {api}/configs/{id}/{artifact};
   * 2xx → the bytes are written as they are, 4xx → "Client error".
   */
  async downloadConfigArtifact(artifact: 'config' | 'evm_verifier' | 'app_vm_commit', configId = this.configId): Promise<Reply> {
    return this.send('GET', `${this.api}/configs/${configId}/${artifact}`); // config.rs:221, 227-229
  }

  /**
   * `get_proving_keys` (v2.0.0:crates/sdk/src/config.rs:119-171): the key type `app_pk` is split
   * at its first `_` (config.rs:126) into GET {api}/configs/{id}/pk/app (config.rs:127-131) or
   * …/vk/{part} (config.rs:132-136); a 2xx body is read into PkDownloader (config.rs:150-160).
   */
  async getProvingKeysReply(keyType: string, configId = this.configId): Promise<Reply> {
    const i = keyType.indexOf('_'); // config.rs:126 (split_once)
    const [part, pOrV] = [keyType.slice(0, i), keyType.slice(i + 1)];
    if (pOrV !== 'pk' && pOrV !== 'vk') throw new Error(`Invalid key type: ${keyType}`); // config.rs:137-139
    return this.send('GET', `${this.api}/configs/${configId}/${pOrV}/${part}`); // config.rs:127-136, 145-147
  }

  async getProvingKeys(keyType: string, configId = this.configId): Promise<{ download_url: string }> {
    return json(await this.getProvingKeysReply(keyType, configId), PkDownloader, 'PkDownloader');
  }

  /**
   * `PkDownloader::download_pk_with_callback` (v2.0.0:crates/sdk/src/config.rs:40-87): a plain
   * `Client::new().get(download_url)`: no API key, no version header (config.rs:50-55).
   */
  async downloadPk(downloadUrl: string, extraHeaders: Record<string, string> = {}): Promise<Reply> {
    return this.send('GET', downloadUrl, { auth: false, headers: extraHeaders });
  }

  // ---------------------------------------------------------------- prove.rs

  /**
   * `generate_new_proof_base` (v2.0.0:crates/sdk/src/prove.rs:208-298): POST
   * {api}/proofs?program_id=…&proof_type=…[&num_gpus=…][&priority=…] (prove.rs:232-244). Without
   * deferred proofs: `Content-Type: application/json` and the body `{"input": […]}` as
   * serde_json writes it (prove.rs:247-260). With them: multipart, text field `input` holding
   * that JSON (prove.rs:263-264), then one `child_proofs` part per file with the file's name and
   * `application/octet-stream` (prove.rs:265-289). The id is `response["id"]` (prove.rs:293-294).
   */
  async generateNewProof(args: ProveArgs): Promise<{ id: string; reply: Reply }> {
    const proofType = args.proof_type ?? 'stark'; // prove.rs:218; the CLI's default too (v2.0.0:crates/cli/src/commands/prove.rs:107)
    let url = `${this.api}/proofs?program_id=${args.program_id}&proof_type=${proofType}`; // prove.rs:232-235
    if (args.num_gpus !== undefined) url += `&num_gpus=${args.num_gpus}`; // prove.rs:238-240
    if (args.priority !== undefined) url += `&priority=${args.priority}`; // prove.rs:242-244
    const body = JSON.stringify(args.input ?? { input: [] }); // prove.rs:247-250
    let r: Reply;
    if (!args.deferred?.length) {
      r = await this.send('POST', url, { headers: { 'Content-Type': 'application/json' }, body }); // prove.rs:257-260
    } else {
      for (const d of args.deferred) {
        // prove.rs:272-280: the client refuses a file whose first non-blank byte is `{`.
        const first = Buffer.from(d.bytes).toString('latin1').trimStart()[0];
        if (first === '{') throw new Error(`Deferred proof ${d.filename} looks like JSON; the client refuses it`);
      }
      const form = multipart([
        { name: 'input', data: body }, // prove.rs:263-264 (Form::text: no file name, no Content-Type)
        ...args.deferred.map((d) => ({
          name: 'child_proofs',
          data: d.bytes,
          filename: d.filename,
          contentType: 'application/octet-stream',
        })), // prove.rs:281-288
      ]);
      r = await this.send('POST', url, { headers: { 'Content-Type': form.contentType }, body: form.body }); // prove.rs:290
    }
    return { id: json(r, IdBody, 'proof submission response').id, reply: r }; // prove.rs:293-294
  }

  /** `get_proof_status` (v2.0.0:crates/sdk/src/prove.rs:105-112): GET {api}/proofs/{id} into ProofStatus. */
  async getProofStatus(proofId: string): Promise<any> {
    return json(await this.send('GET', `${this.api}/proofs/${proofId}`), ProofStatus, 'ProofStatus'); // prove.rs:106-110
  }

  /** `list_proofs` (v2.0.0:crates/sdk/src/prove.rs:88-103): GET {api}/proofs?program_id=&page=&page_size=. */
  async listProofs(programId: string, page = 1, pageSize = 20): Promise<any> {
    const r = await this.send('GET', `${this.api}/proofs?program_id=${programId}&page=${page}&page_size=${pageSize}`); // prove.rs:94-101
    return json(r, ProofList, 'ProofListResponse');
  }

  /**
   * `get_generated_proof` (v2.0.0:crates/sdk/src/prove.rs:141-159): GET {api}/proofs/{id}/proof/{type}
   * through `download_file` (v2.0.0:crates/sdk/src/lib.rs:570-608): 2xx → the bytes, saved as `{type}-proof.json`.
   */
  async getGeneratedProof(proofId: string, proofType: string): Promise<Reply> {
    const r = await this.send('GET', `${this.api}/proofs/${proofId}/proof/${proofType}`); // prove.rs:147-152
    if (!r.ok) throw clientError(r);
    return r;
  }

  /**
   * `save_proof_logs_to_path` / `get_proof_logs` (v2.0.0:crates/sdk/src/prove.rs:114-139, 161-165):
   * GET {api}/proofs/{id}/logs through `download_file_streaming` (v2.0.0:crates/sdk/src/lib.rs:537-568).
   */
  async getProofLogs(proofId: string): Promise<Reply> {
    const r = await this.send('GET', `${this.api}/proofs/${proofId}/logs`); // prove.rs:118, 130
    if (!r.ok) throw clientError(r);
    return r;
  }

  /**
   * `cancel_proof` (v2.0.0:crates/sdk/src/prove.rs:175-200): POST {api}/proofs/{id}/cancel with
   * `Content-Type: application/json` and the body `{}`; a 2xx JSON body's `message` is shown.
   */
  async cancelProof(proofId: string): Promise<{ message: string; reply: Reply }> {
    const r = await this.send('POST', `${this.api}/proofs/${proofId}/cancel`, {
      headers: { 'Content-Type': 'application/json' },
      body: '{}',
    }); // prove.rs:176-180
    if (!r.ok) throw new Error(`Failed to cancel proof (${r.status}): ${r.text}`); // prove.rs:193-199
    let message = 'Cancellation request submitted successfully'; // prove.rs:192
    try {
      const m = (JSON.parse(r.text) as { message?: unknown }).message; // prove.rs:186-191
      if (typeof m === 'string') message = m;
    } catch {
      /* the client falls back to its default message */
    }
    return { message, reply: r };
  }

  /**
   * `wait_for_proof_completion_base` (v2.0.0:crates/sdk/src/prove.rs:300-469). `Succeeded`
   * (prove.rs:319) ends it; with `save` the client parses `proof_type` into ProofType (an error
   * if it is neither evm nor stark, prove.rs:381) and downloads the proof and the logs
   * (prove.rs:379-408). `Failed` → "Proof generation failed: …" (prove.rs:414-422);
   * `Canceled` ends it (prove.rs:423-430); everything else polls (prove.rs:431-466).
   */
  async waitForProofCompletion(proofId: string, save: boolean, timeoutMs = 45_000): Promise<{ status: any; proof?: Reply; logs?: Reply }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = await this.getProofStatus(proofId); // prove.rs:311-316
      if (s.state === 'Succeeded') {
        if (!save) return { status: s };
        const type = String(s.proof_type).toLowerCase();
        if (type !== 'evm' && type !== 'stark') throw new Error(`Invalid proof type: ${s.proof_type}. Must be 'evm' or 'stark'`); // lib.rs:55-64
        return { status: s, proof: await this.getGeneratedProof(s.id, type), logs: await this.getProofLogs(s.id) };
      }
      if (s.state === 'Failed') throw new Error(`Proof generation failed: ${s.error_message ?? 'Unknown error'}`);
      if (s.state === 'Canceled') return { status: s };
      if (Date.now() > deadline) throw new Error(`the client would still be polling proof ${proofId}: state '${s.state}'`);
      await sleep(POLL_MS);
    }
  }

  /**
   * `wait_for_proof_cancellation_base` (v2.0.0:crates/sdk/src/prove.rs:471-534): `Canceled` ends
   * it (prove.rs:489); `Failed` and `Succeeded` are errors (prove.rs:504-523); the rest polls.
   */
  async waitForProofCancellation(proofId: string, timeoutMs = 45_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = await this.getProofStatus(proofId); // prove.rs:481-486
      if (s.state === 'Canceled') return s;
      if (s.state === 'Failed') throw new Error(`Proof failed before cancellation could complete: ${s.error_message ?? 'Unknown error'}`);
      if (s.state === 'Succeeded') throw new Error('Proof completed successfully before cancellation could take effect');
      if (Date.now() > deadline) throw new Error(`the client would still be waiting for proof ${proofId} to cancel: state '${s.state}'`);
      await sleep(POLL_MS);
    }
  }

  // ---------------------------------------------------------------- run.rs

  /**
   * `execute_program_base` (v2.0.0:crates/sdk/src/run.rs:206-270): POST {api}/executions with the
   * query pairs appended by `url::Url::query_pairs_mut` in the order program_id, mode
   * (run.rs:229-233), `Content-Type: application/json`, the API key and the body
   * `{"input": […]}` (run.rs:222-240); the id is `response["id"]` (run.rs:245-251).
   */
  async executeProgram(programId: string, mode: string, input?: { input: string[] }): Promise<{ id: string; reply: Reply }> {
    const url = `${this.api}/executions?program_id=${formUrlEncode(programId)}&mode=${formUrlEncode(mode)}`; // run.rs:218, 229-233
    const body = JSON.stringify(input ?? { input: [] }); // run.rs:222-225
    const r = await this.send('POST', url, { headers: { 'Content-Type': 'application/json' }, body }); // run.rs:235-243
    return { id: json(r, IdBody, 'execution submission response').id, reply: r };
  }

  /** `get_execution_status` (v2.0.0:crates/sdk/src/run.rs:74-101): GET {api}/executions/{id} into ExecutionStatus. */
  async getExecutionStatus(executionId: string): Promise<any> {
    return json(await this.send('GET', `${this.api}/executions/${executionId}`), ExecutionStatus, 'ExecutionStatus'); // run.rs:75-85
  }

  /** `list_executions` (v2.0.0:crates/sdk/src/run.rs:144-180): GET {api}/executions?program_id=&page=&page_size=. */
  async listExecutions(programId: string, page = 1, pageSize = 20): Promise<any> {
    const r = await this.send('GET', `${this.api}/executions?program_id=${programId}&page=${page}&page_size=${pageSize}`); // run.rs:150-161
    return json(r, ExecutionList, 'ExecutionListResponse');
  }

  /** `get_execution_logs` (v2.0.0:crates/sdk/src/run.rs:182-202): GET {api}/executions/{id}/logs, streamed to a file. */
  async getExecutionLogs(executionId: string): Promise<Reply> {
    const r = await this.send('GET', `${this.api}/executions/${executionId}/logs`); // run.rs:183-198
    if (!r.ok) throw clientError(r);
    return r;
  }

  /**
   * `wait_for_execution_completion_base` (v2.0.0:crates/sdk/src/run.rs:272-425): `Succeeded` ends
   * it (run.rs:285); `Failed` → "Execution failed: …" (run.rs:387-395); `Queued`, `InProgress`
   * and any other spelling poll (run.rs:396-422), so a status outside those four never ends it.
   */
  async waitForExecutionCompletion(executionId: string, timeoutMs = 45_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = await this.getExecutionStatus(executionId); // run.rs:282
      if (s.status === 'Succeeded') return s;
      if (s.status === 'Failed') throw Object.assign(new Error(`Execution failed: ${s.error_message ?? 'Unknown error'}`), { status: s });
      if (Date.now() > deadline) throw new Error(`the client would still be polling execution ${executionId}: status '${s.status}'`);
      await sleep(POLL_MS);
    }
  }

  // ---------------------------------------------------------------- verify.rs

  /**
   * `submit_verification_request` (v2.0.0:crates/sdk/src/verify.rs:204-256): the proof file's text
   * with every `0x` removed (verify.rs:213-215) as multipart part `proof`, file name `proof.json`,
   * `application/json` (verify.rs:218-223), POSTed with the version and key headers
   * (verify.rs:229-234); the id is `response["id"]` (verify.rs:239-245).
   */
  private async submitVerification(url: string, proofFileText: string): Promise<{ id: string; reply: Reply }> {
    const processed = proofFileText.replaceAll('0x', ''); // verify.rs:215
    const form = multipart([{ name: 'proof', data: processed, filename: 'proof.json', contentType: 'application/json' }]);
    const r = await this.send('POST', url, { headers: { 'Content-Type': form.contentType }, body: form.body });
    return { id: json(r, IdBody, 'verification submission response').id, reply: r };
  }

  /** `verify_stark_base` (v2.0.0:crates/sdk/src/verify.rs:132-153): POST {api}/verify/stark?program_id=…. */
  async verifyStark(programId: string, proofFileText: string): Promise<{ id: string; reply: Reply }> {
    return this.submitVerification(`${this.api}/verify/stark?program_id=${programId}`, proofFileText); // verify.rs:148-152
  }

  /**
   * `verify_evm_base` (v2.0.0:crates/sdk/src/verify.rs:73-130): checks the file locally (every `0x`
   * removed, JSON with version, user_public_values, app_exe_commit, app_vm_commit,
   * proof_data.accumulator, proof_data.proof: verify.rs:90-117), reads the config's metadata
   * (GET {api}/configs/{id}, verify.rs:120), then POSTs {api}/verify?config_id=… (verify.rs:128-129).
   */
  async verifyEvm(configId: string, proofFileText: string): Promise<{ id: string; reply: Reply; metadata: any }> {
    const doc = JSON.parse(proofFileText.replaceAll('0x', '')) as Record<string, any>; // verify.rs:90-93
    for (const f of ['version', 'user_public_values', 'app_exe_commit', 'app_vm_commit', 'proof_data']) {
      if (!(f in doc)) throw new Error(`Missing '${f}' field in proof`); // verify.rs:96-110
    }
    for (const f of ['accumulator', 'proof']) if (!(f in doc.proof_data)) throw new Error(`Missing '${f}' in proof_data`); // verify.rs:111-117
    const metadata = await this.getVmConfigMetadata(configId); // verify.rs:120
    return { ...(await this.submitVerification(`${this.api}/verify?config_id=${configId}`, proofFileText)), metadata };
  }

  /** `get_verification_result` / `get_verification_status` (v2.0.0:crates/sdk/src/verify.rs:46-49, 177-201): GET {api}/verify/{id}. */
  async getVerificationResult(verifyId: string): Promise<any> {
    return json(await this.send('GET', `${this.api}/verify/${verifyId}`), VerifyStatus, 'VerifyStatus'); // verify.rs:47, 182-190
  }

  /**
   * `wait_for_verification_completion` / `wait_for_verify_completion_base`
   * (v2.0.0:crates/sdk/src/verify.rs:259-338, 341-417), behind verify evm, verify stark
   * (both read the unified GET {api}/verify/{id}, verify.rs:34-44) and verify status --wait:
   * `verified` ends it (verify.rs:275), `failed` is an error (verify.rs:299-317), the rest polls.
   */
  async waitForVerification(verifyId: string, timeoutMs = 45_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = await this.getVerificationResult(verifyId);
      if (s.result === 'verified') return s;
      if (s.result === 'failed') throw Object.assign(new Error('Proof verification failed'), { status: s });
      if (Date.now() > deadline) throw new Error(`the client would still be polling verification ${verifyId}: result '${s.result}'`);
      await sleep(POLL_MS);
    }
  }
}
