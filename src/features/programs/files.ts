// A registration's files: the multipart body's `elf` and `vmexe` parts streamed into R2
// (never buffered whole), the ELF hashed and its head checked on the way, and the
// optional `project_name` field. What it answers is what the program's rows need
// (src/features/programs/data.ts registration()).
import { artifactKey, type ArtifactBatch } from '../../lib/artifacts.ts';
import { toHex } from '../../lib/crypto.ts';
import { ELF_HEAD_BYTES, validateElf } from '../../lib/elf.ts';
import { ApiError, ValidationError } from '../../lib/errors.ts';
import { MemorySink, type MultipartForm } from '../../lib/multipart.ts';
import { unsafeNameIssue } from '../../lib/schemas.ts';
import type { StoredProgram } from './data.ts';

const HASH_RUN_BYTES = 256 * 1024;

/** Streams the `elf` and `vmexe` parts into R2, checking the ELF on the way. */
export async function receiveProgramFiles(form: MultipartForm, programId: string, artifacts: ArtifactBatch): Promise<StoredProgram> {
  const hash = new crypto.DigestStream('SHA-256');
  const hashWriter = hash.getWriter();
  // The hash is fed in runs of HASH_RUN_BYTES, not chunk by chunk: each write to the
  // DigestStream is a promise and a hop into the runtime, and a 1 MiB ELF comes in
  // hundreds of chunks (`npm run bench:api`). A run is at most HASH_RUN_BYTES held.
  const run = new MemorySink(Infinity, () => new Error('unreachable'));
  const feedHash = () => {
    if (run.size > 0) void hashWriter.write(run.take());
    run.size = 0;
  };
  const head = new MemorySink(ELF_HEAD_BYTES, () => new Error('unreachable'));
  let elfFilename: string | undefined;
  const fieldTooLong = () => new ApiError(400, 'Form field project_name is longer than 256 bytes');

  const parts = await form.read({
    elf: {
      required: true,
      max: 1,
      // Into R2, hashed and its head kept for the checks below on the way.
      sink(part) {
        elfFilename = part.filename;
        const r2 = artifacts.stream(artifactKey.programElf(programId));
        return {
          get size() {
            return r2.size;
          },
          write(chunk: Uint8Array) {
            run.write(chunk);
            if (run.size >= HASH_RUN_BYTES) feedHash();
            if (head.size < ELF_HEAD_BYTES) head.write(chunk.subarray(0, ELF_HEAD_BYTES - head.size));
            return r2.write(chunk);
          },
          end: () => {
            feedHash();
            return r2.end();
          },
        };
      },
    },
    vmexe: { required: true, max: 1, sink: () => artifacts.stream(artifactKey.programVmexe(programId)) },
    // Given more than once, the last one counts.
    project_name: { fieldOnly: true, sink: () => new MemorySink(256, fieldTooLong) },
  });

  await hashWriter.close();
  const elfSize = parts.elf[0].size;
  const vmexe = parts.vmexe[0];
  const problem = validateElf(head.bytes(), elfSize);
  if (problem) throw new ApiError(400, `Invalid ELF: ${problem}`);
  if (vmexe.size === 0) throw new ApiError(400, 'vmexe is empty');
  const projectName = parts.project_name.at(-1)?.text().trim() || undefined;
  const unsafe = projectName && unsafeNameIssue(['body', 'project_name'], projectName);
  if (unsafe) throw new ValidationError([unsafe]);
  return {
    elfSize,
    elfSha256: toHex(await hash.digest),
    elfFilename: elfFilename?.replace(/\.elf$/i, '') || undefined,
    vmexeSize: vmexe.size,
    projectName,
  };
}
