// The response structs of the published client (axiom-crypto/axiom-api-cli, tag v2.0.0),
// written as small field-specs and checked the way serde_json would check them when the
// client deserializes a response: every non-Option field present with the right JSON
// type (null is refused), Option fields may be null or absent, integers must be
// non-negative whole numbers that fit the Rust type, unknown fields are ignored.
// Where the client matches a string field against fixed spellings (its polling loops),
// the spec lists the spellings the contract allows.
//
// Citations are `v2.0.0:<path>:<line>` in the client repository.

export type Kind =
  | 'string'
  | 'string?'
  | 'u8'
  | 'u32'
  | 'u64'
  | 'u64?'
  | 'usize'
  | 'usize?'
  | 'bool'
  /** serde_json::Value inside an Option: anything, null included. */
  | 'json?';

export interface OneOf {
  oneOf: readonly string[];
  /** A nullable enum-like string (Option<String>): null or absent passes. */
  nullable?: boolean;
}
export interface ListOf {
  list: Shape;
}
export type Field = Kind | OneOf | ListOf | Shape;
export interface Shape {
  [field: string]: Field;
}

const MAX: Record<string, number> = { u8: 0xff, u32: 0xffff_ffff, u64: Number.MAX_SAFE_INTEGER, usize: Number.MAX_SAFE_INTEGER };

function checkKind(v: unknown, kind: Kind, at: string, out: string[]): void {
  const nullable = kind.endsWith('?');
  const base = kind.replace('?', '');
  if (v === undefined) {
    if (!nullable) out.push(`${at}: missing (serde: missing field)`);
    return;
  }
  if (v === null) {
    if (!nullable) out.push(`${at}: null where the client has a non-Option ${base}`);
    return;
  }
  switch (base) {
    case 'json':
      return;
    case 'string':
      if (typeof v !== 'string') out.push(`${at}: expected a string, got ${JSON.stringify(v)}`);
      return;
    case 'bool':
      if (typeof v !== 'boolean') out.push(`${at}: expected a boolean, got ${JSON.stringify(v)}`);
      return;
    default:
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > MAX[base]) {
        out.push(`${at}: expected an unsigned integer fitting ${base}, got ${JSON.stringify(v)}`);
      }
  }
}

function check(v: unknown, field: Field, at: string, out: string[]): void {
  if (typeof field === 'string') return checkKind(v, field, at, out);
  if ('oneOf' in field && Array.isArray(field.oneOf)) {
    const f = field as OneOf;
    if ((v === null || v === undefined) && f.nullable) return;
    if (v === undefined) return void out.push(`${at}: missing (serde: missing field)`);
    if (typeof v !== 'string') return void out.push(`${at}: expected a string, got ${JSON.stringify(v)}`);
    if (!f.oneOf.includes(v)) out.push(`${at}: '${v}' is not a spelling the client knows (${f.oneOf.join(' | ')})`);
    return;
  }
  if ('list' in field && typeof field.list === 'object' && !Array.isArray(field.list)) {
    if (!Array.isArray(v)) return void out.push(`${at}: expected an array, got ${JSON.stringify(v)}`);
    v.forEach((item, i) => check(item, { ...(field.list as Shape) }, `${at}[${i}]`, out));
    return;
  }
  const shape = field as Shape;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return void out.push(`${at}: expected an object, got ${JSON.stringify(v)}`);
  for (const [name, sub] of Object.entries(shape)) check((v as Record<string, unknown>)[name], sub, `${at}.${name}`, out);
}

/** Every way `value` fails to deserialize into `shape` (empty when it would). */
export function shapeErrors(value: unknown, shape: Shape, name = '$'): string[] {
  const out: string[] = [];
  check(value, shape, name, out);
  return out;
}

// ---------------------------------------------------------------------------
// Spellings the client matches on.

/** Program `status` values (interface 2.1); the build wait loop knows ready / error|failed / processing / not_ready, v2.0.0:crates/sdk/src/build.rs:403-473. */
export const BUILD_STATUSES = ['ready', 'processing', 'not_ready', 'error', 'failed'] as const;
/** Proof `state` values (interface 2.2); the wait loops match Succeeded/Failed/Canceled/Canceling/Queued/InProgress, v2.0.0:crates/sdk/src/prove.rs:318-466, 488-531, and poll on the rest. */
export const PROOF_STATES = [
  'Queued',
  'Executing',
  'Executed',
  'AppProving',
  'AppProvingDone',
  'PostProcessing',
  'Failed',
  'Succeeded',
  'Canceling',
  'Canceled',
  'InProgress',
] as const;
/** Execution `status`: the loop ends only on Succeeded / Failed and knows Queued / InProgress, v2.0.0:crates/sdk/src/run.rs:284-422. */
export const EXECUTION_STATUSES = ['Queued', 'InProgress', 'Succeeded', 'Failed'] as const;
/** Verification `result`: verified / failed end the loop, processing polls, v2.0.0:crates/sdk/src/verify.rs:274-328. */
export const VERIFY_RESULTS = ['processing', 'verified', 'failed'] as const;
/** `proof_type` is parsed into ProofType (evm|stark, case-insensitive) before saving, v2.0.0:crates/sdk/src/prove.rs:381 and src/lib.rs:55-64. */
export const PROOF_TYPES = ['stark', 'evm', 'STARK', 'EVM', 'Stark', 'Evm'] as const;

// ---------------------------------------------------------------------------
// The structs.

/** PaginationInfo, v2.0.0:crates/sdk/src/build.rs:155-161 (same in projects.rs:63-69, prove.rs:79-85, run.rs:65-71). */
export const Pagination: Shape = { total: 'u32', page: 'u32', page_size: 'u32', pages: 'u32' };

/** BuildStatus, v2.0.0:crates/sdk/src/build.rs:128-147. */
export const BuildStatus: Shape = {
  id: 'string',
  created_at: 'string',
  status: { oneOf: BUILD_STATUSES },
  config_uuid: 'string',
  error_message: 'string?',
  name: 'string',
  created_by: 'string',
  last_active_at: 'string',
  launched_at: 'string?',
  terminated_at: 'string?',
  program_hash: 'string',
  openvm_config: 'string',
  cells_used: 'u64',
  proofs_run: 'u64',
  project_id: 'string',
  project_name: 'string',
  default_num_gpus: 'usize',
};

/** build::ProgramListResponse, v2.0.0:crates/sdk/src/build.rs:149-153. */
export const BuildList: Shape = { items: { list: BuildStatus }, pagination: Pagination };

/** VmConfigMetadata, v2.0.0:crates/sdk/src/config.rs:19-28. */
export const VmConfigMetadata: Shape = {
  id: 'string',
  created_at: 'string',
  openvm_version: 'string',
  stark_backend_version: 'string',
  status: 'string',
  active: 'bool',
  app_vm_commit: 'string',
};

/** PkDownloader, v2.0.0:crates/sdk/src/config.rs:30-33. */
export const PkDownloader: Shape = { download_url: 'string' };

/** ProjectResponse, v2.0.0:crates/sdk/src/projects.rs:26-35. */
export const ProjectResponse: Shape = {
  id: 'string',
  name: 'string',
  created_at: 'string',
  created_by: 'string',
  program_count: 'u32',
  total_proofs_run: 'u32',
  last_active_at: 'string?',
};
/** ProjectListResponse, v2.0.0:crates/sdk/src/projects.rs:37-41. */
export const ProjectList: Shape = { items: { list: ProjectResponse }, pagination: Pagination };
/** ProjectCreateResponse, v2.0.0:crates/sdk/src/projects.rs:43-46. */
export const ProjectCreateResponse: Shape = { id: 'string' };
/** projects::ProgramResponse, v2.0.0:crates/sdk/src/projects.rs:48-55. */
export const ProjectProgram: Shape = { id: 'string', name: 'string?', project_id: 'string', project_name: 'string', created_at: 'string' };
/** projects::ProgramListResponse, v2.0.0:crates/sdk/src/projects.rs:57-61. */
export const ProjectProgramList: Shape = { items: { list: ProjectProgram }, pagination: Pagination };

/** ProofStatus, v2.0.0:crates/sdk/src/prove.rs:56-71. */
export const ProofStatus: Shape = {
  id: 'string',
  created_at: 'string',
  state: { oneOf: PROOF_STATES },
  proof_type: { oneOf: PROOF_TYPES },
  program_uuid: 'string',
  error_message: 'string?',
  launched_at: 'string?',
  terminated_at: 'string?',
  created_by: 'string',
  cells_used: 'u64',
  num_instructions: 'u64?',
  num_gpus: 'usize',
  priority: 'u8',
};
/** ProofListResponse, v2.0.0:crates/sdk/src/prove.rs:73-77. */
export const ProofList: Shape = { items: { list: ProofStatus }, pagination: Pagination };

/** ExecutionStatus, v2.0.0:crates/sdk/src/run.rs:41-57. */
export const ExecutionStatus: Shape = {
  id: 'string',
  created_at: 'string',
  status: { oneOf: EXECUTION_STATUSES },
  program_uuid: 'string',
  error_message: 'string?',
  launched_at: 'string?',
  terminated_at: 'string?',
  created_by: 'string',
  mode: 'string',
  public_values: 'json?',
  cost: 'u64?',
  num_segments: 'usize?',
  total_cycle: 'u64?',
  total_tick: 'u64?',
};
/** ExecutionListResponse, v2.0.0:crates/sdk/src/run.rs:59-63. */
export const ExecutionList: Shape = { items: { list: ExecutionStatus }, pagination: Pagination };

/** VerifyStatus, v2.0.0:crates/sdk/src/verify.rs:25-31. */
export const VerifyStatus: Shape = { id: 'string', created_at: 'string', result: { oneOf: VERIFY_RESULTS }, proof_type: 'string' };

/** What the client reads out of a creation response: `body["id"].as_str()` (e.g. v2.0.0:crates/sdk/src/build.rs:993-995). */
export const IdBody: Shape = { id: 'string' };
