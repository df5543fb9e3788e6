// The openvm engine proves only with the keys the service publishes: the host's key
// files are hashed (once per file, not per job) and compared with the digests the
// agent hands it (GET /internal/v1/configs/{id} `keys`), against the stand-in CLI.
import { createHash } from 'node:crypto';
import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PublishedKeys } from '../../../prover-agent/src/protocol.ts';
import { makeHost, makeJob, type Host, type Job } from './harness.ts';

let host: Host;
beforeEach(async () => {
  host = await makeHost();
});
afterEach(() => host.cleanup());

const sha256 = async (path: string) =>
  createHash('sha256')
    .update(await readFile(path))
    .digest('hex');

const keyPaths = (h: Host) => ({
  app_pk: join(h.configDir, 'openvm', 'app.pk'),
  app_vk: join(h.configDir, 'openvm', 'app.vk'),
  agg_pk: join(h.home, '.openvm', 'internal_recursive.pk'),
  agg_vk: join(h.home, '.openvm', 'internal_recursive.vk'),
});

/** What the service would report for this host's keys as they are now. */
async function publishedAsOnHost(h: Host): Promise<PublishedKeys> {
  const keys: PublishedKeys = {};
  for (const [name, path] of Object.entries(keyPaths(h)))
    keys[name as keyof PublishedKeys] = { version: 1, sha256: await sha256(path), size: (await readFile(path)).length };
  return keys;
}

const prove = (job: Job) =>
  host.engine().prove(job.ctx, {
    proof_type: 'stark',
    elfPath: job.files.elf,
    vmexePath: job.files.vmexe,
    inputPath: job.files.input,
    childProofPaths: [],
    outputPath: join(job.workDir, 'stark-proof.json'),
    app_exe_commit: '0x' + '00'.repeat(32),
    baselinePath: join(job.workDir, 'baseline.json'),
  });

const proveInvocations = async () => (await host.invocations()).filter((i) => i.argv.includes('prove'));

describe('openvm engine: published key digests', () => {
  it('proves with keys whose digests are the published ones', async () => {
    const job = await makeJob(host);
    job.ctx.publishedKeys = await publishedAsOnHost(host);
    await expect(prove(job)).resolves.toMatchObject({ public_values: expect.any(String) });
    expect(await proveInvocations()).toHaveLength(1);
  });

  it('refuses to prove with a tampered key, naming the key, both digests and what to do', async () => {
    const published = await publishedAsOnHost(host);
    await appendFile(keyPaths(host).agg_pk, 'swapped by someone on this host');
    const job = await makeJob(host);
    job.ctx.publishedKeys = published;
    const err = (await prove(job).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(Error);
    expect(err.constructor.name).toBe('Error'); // the host's problem, retried elsewhere: not the caller's JobError
    expect(err.message).toContain('not the published ones');
    expect(err.message).toContain(
      `agg_pk (${keyPaths(host).agg_pk}: sha256 ${await sha256(keyPaths(host).agg_pk)}, published version 1: ${published.agg_pk!.sha256})`,
    );
    expect(err.message).toMatch(/setup-config .* --run/);
    expect(await proveInvocations()).toEqual([]); // refused before the tool ran
  });

  it('hashes a key file once, not per job, and again once the file changes', async () => {
    const published = await publishedAsOnHost(host);
    const first = await makeJob(host);
    first.ctx.publishedKeys = published;
    await prove(first);
    // The digest is kept beside the file with the identity of the file it was computed from.
    const sidecar = `${keyPaths(host).app_pk}.sha256.json`;
    const kept = JSON.parse(await readFile(sidecar, 'utf8')) as { identity: string; sha256: string };
    expect(kept.sha256).toBe(published.app_pk!.sha256);

    // A later job (another engine process) trusts the kept digest while the file is unchanged:
    // shown by a kept digest that no longer matches, which only a rehash would correct.
    await writeFile(sidecar, JSON.stringify({ ...kept, sha256: '0'.repeat(64) }));
    const second = await makeJob(host);
    second.ctx.publishedKeys = published;
    await expect(prove(second)).rejects.toThrow(/app_pk .* sha256 0{64}/);

    // A rewritten file is a new identity: hashed again, and found to be the published key.
    await writeFile(keyPaths(host).app_pk, await readFile(keyPaths(host).app_pk));
    const third = await makeJob(host);
    third.ctx.publishedKeys = published;
    await expect(prove(third)).resolves.toBeDefined();
  });

  it('compares nothing for keys the service has not published', async () => {
    const job = await makeJob(host);
    job.ctx.publishedKeys = {};
    await expect(prove(job)).resolves.toBeDefined();
  });
});
