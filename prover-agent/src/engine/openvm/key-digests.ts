// Before proving, the host's key files must be the config's published versions: a
// proof made with other keys verifies against nothing callers downloaded (or, with a
// key swapped on this host, against what an attacker chose). The agent hands the
// engine the digests the service reports (GET /internal/v1/configs/{id} `keys`,
// EngineContext.publishedKeys); a file whose SHA-256 differs fails the job on this
// host (an infrastructure failure: it is retried on another host) with a message for
// the operator.
//
// Hashing a multi-gigabyte key takes seconds, so a file's digest is kept, per file,
// with the identity of the file it was computed from (device, inode, size, mtime,
// ctime: ctime cannot be set back by a user, so a rewritten file is hashed again) in a
// sidecar `<file>.sha256.json`, which outlives the engine process (one process per
// job), or in this process's memory when the key's directory is read-only.
import { readFile, stat, writeFile } from 'node:fs/promises';
import { sha256File } from '../../lib/file-digest.ts';
import type { PublishedKeyName, PublishedKeys } from '../../protocol.ts';

interface Digested {
  /** dev:ino:size:mtimeMs:ctimeMs of the file hashed. */
  identity: string;
  sha256: string;
}

const memory = new Map<string, Digested>();

const sidecar = (path: string) => `${path}.sha256.json`;

/** The file's SHA-256, from the cache when the file is the one hashed last. */
export async function keyFileDigest(path: string): Promise<string> {
  const s = await stat(path);
  const identity = `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
  const kept = await readFile(sidecar(path), 'utf8').then(
    (t) => JSON.parse(t) as Partial<Digested>,
    () => undefined,
  );
  for (const known of [kept, memory.get(path)]) {
    if (known?.identity === identity && typeof known.sha256 === 'string' && /^[0-9a-f]{64}$/.test(known.sha256)) return known.sha256;
  }
  const sha256 = await sha256File(path);
  const digested = { identity, sha256 };
  memory.set(path, digested);
  await writeFile(sidecar(path), JSON.stringify(digested)).catch(() => undefined); // a read-only key directory: memory only
  return sha256;
}

/**
 * Throws (a plain Error) unless every file named has the digest the service publishes
 * for its key. A key the service has not published is not compared: there is nothing
 * to compare with (and callers cannot download one either).
 */
export async function checkKeyDigests(
  configId: string,
  published: PublishedKeys | undefined,
  files: Partial<Record<PublishedKeyName, string>>,
): Promise<void> {
  if (!published) return;
  const wrong: string[] = [];
  for (const [name, path] of Object.entries(files) as [PublishedKeyName, string][]) {
    const want = published[name];
    if (!want) continue;
    const have = await keyFileDigest(path);
    if (have !== want.sha256) wrong.push(`${name} (${path}: sha256 ${have}, published version ${want.version}: ${want.sha256})`);
  }
  if (wrong.length) {
    throw new Error(
      `openvm engine: this host's keys for config ${configId} are not the published ones: ${wrong.join('; ')}; ` +
        `the operator must re-create them (\`prover-agent setup-config ${configId} --run\`) or publish a new version (--publish --supersede)`,
    );
  }
}
