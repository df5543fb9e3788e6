// The commands the console offers to copy as a next step, with the organization's real
// ids and this service's address (the page's origin): curl against the public API
// (README "A first session with curl") and the published client, `cargo axiom`, pointed
// at this service. `$API_KEY` stands for a key from the API keys page: a key is shown
// once, when it is made, and never written into a page afterwards.
//
// cargo axiom's commands and flags as its v1 CLI declares them (axiom-crypto/axiom-api-cli
// crates/cli/src/commands): `register --api-url URL --api-key KEY` (register.rs: the URL
// includes /v1), `upload-exe --config-id ID --project-id ID` (upload_exe.rs, run in the
// guest program's directory after `cargo openvm build`), `prove --program-id ID --input HEX`
// (prove.rs), `run --program-id ID --input HEX --mode meter` (run.rs; its default mode is pure).

/**
 * The public API's key header: src/middleware/auth.ts API_KEY_HEADER, which the browser
 * bundle cannot import (that module is server code); test/worker/console-pages.test.ts
 * checks the two agree.
 */
export const KEY_HEADER = 'Service-API-Key';

/** A placeholder for what the console cannot know: a config id is the operator's to give. */
export const CONFIG_PLACEHOLDER = '$CONFIG_ID';

/** An input to show in a command: one entry of raw bytes ("hello"), as the guest ABI reads it. */
const SAMPLE_INPUT = '0x0168656c6c6f';

const q = encodeURIComponent;

/** `cargo axiom register`: the published client, pointed at this service with a key. */
export const cargoRegister = (base: string) => `cargo axiom register --api-url ${base}/v1 --api-key $API_KEY`;

/** Registers a program (an ELF and its VMEXE) into a project, or into a new one by name. */
export function registerProgram(base: string, where: { projectId: string } | { projectName: string }, configId?: string): string {
  const config = configId ?? CONFIG_PLACEHOLDER;
  const project = 'projectId' in where ? `project_id=${q(where.projectId)}` : `project_name=${q(where.projectName)}`;
  return [
    `curl -s "${base}/v1/programs?config_id=${config}&${project}&program_name=my-program" \\`,
    `  -H "${KEY_HEADER}: $API_KEY" -F elf=@program.elf -F vmexe=@program.vmexe`,
    '',
    '# or, in the guest program’s directory, with cargo axiom:',
    cargoRegister(base),
    `cargo axiom upload-exe --config-id ${config}${'projectId' in where ? ` --project-id ${where.projectId}` : ''}`,
  ].join('\n');
}

/** A job of a program on an input (`path`: the public API's, with its query), by curl, then by cargo axiom's `command`. */
const onInput = (base: string, path: string, command: string) =>
  [
    `curl -s "${base}${path}" -H "${KEY_HEADER}: $API_KEY" \\`,
    `  -H 'content-type: application/json' -d '{"input": ["${SAMPLE_INPUT}"]}'`,
    '',
    '# or with cargo axiom (after cargo axiom register):',
    command,
  ].join('\n');

/** Submits a proof of a program. */
export const submitProof = (base: string, programId: string) =>
  onInput(base, `/v1/proofs?program_id=${q(programId)}`, `cargo axiom prove --program-id ${programId} --input ${SAMPLE_INPUT}`);

/** Runs a program without proving it: its cycles, for an estimate. */
export const runExecution = (base: string, programId: string) =>
  onInput(
    base,
    `/v1/executions?program_id=${q(programId)}&mode=meter`,
    `cargo axiom run --program-id ${programId} --input ${SAMPLE_INPUT} --mode meter`,
  );

/** Tries a key just made: the service answers {"message":"OK"}; then points cargo axiom at this service. */
export const tryKey = (base: string, key: string) =>
  [`export API_KEY=${key}`, `curl -s ${base}/v1/validate_api_key -H "${KEY_HEADER}: $API_KEY"`, cargoRegister(base)].join('\n');
