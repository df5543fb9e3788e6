// Deletion end to end (issue 23 item 5): a real agent proves, the caller deletes the
// proof and then its program, and every download of them fails from then on; the
// purge of their storage objects finishes (docs/callers.md "Deleting records").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caller, registerGuest, startStack, type Stack } from './stack.ts';

let stack: Stack;
let api: ReturnType<typeof caller>;

beforeAll(async () => {
  // A purge settles in a second here, not a minute (PURGE_SETTLE_SECONDS): the sweep's
  // pass after it is the one this test waits for, twice.
  stack = await startStack({ vars: { PURGE_SETTLE_SECONDS: '1' } });
  api = caller(stack);
  await stack.startAgent({ name: 'e2e-retention' });
});
afterAll(async () => stack?.stop());

const pendingPurges = async (id: string) => Number((await stack.sql(`SELECT count(*) AS n FROM purges WHERE subject_id = '${id}'`))[0].n);

async function purged(id: string) {
  // The purge's first pass runs after the response; its row goes at the sweep's pass once settled.
  const deadline = Date.now() + 150_000;
  while ((await pendingPurges(id)) > 0) {
    if (Date.now() > deadline) throw new Error(`purge of ${id} not finished`);
    await stack.sweep();
    await new Promise((r) => setTimeout(r, 2000));
  }
}

describe('deleting records with a real agent', () => {
  it('a completed proof, deleted: a tombstone with its cost, its proof and logs gone; then its program', { timeout: 400_000 }, async () => {
    const program = await registerGuest(api, stack.devConfig, 'hello.elf');
    const { id } = await api.json('POST', `/v1/proofs?program_id=${program}`, { input: ['0x0168656c6c6f'] });
    const proof = await api.waitFor(`/v1/proofs/${id}`, (p: any) => ['Succeeded', 'Failed'].includes(p.state));
    expect(proof.state).toBe('Succeeded');
    expect((await api.call('GET', `/v1/proofs/${id}/proof/stark`)).status).toBe(200);
    expect(await (await api.call('GET', `/v1/proofs/${id}/logs`)).text()).toMatch(/hello from the dev zkVM/);

    const tombstone = await api.json('DELETE', `/v1/proofs/${id}`);
    expect(tombstone).toEqual({
      ...proof,
      deleted_at: expect.any(String),
      deleted_by: expect.stringMatching(/^e2e@localhost \(API key sk_[0-9a-f]{8}…\)$/),
    });
    await purged(id);
    expect(await api.json('GET', `/v1/proofs/${id}`)).toEqual(tombstone);
    for (const path of [`/v1/proofs/${id}/proof/stark`, `/v1/proofs/${id}/logs`]) {
      const res = await api.call('GET', path);
      expect(res.status, path).toBe(404);
      expect((await res.json()).detail).toMatch(/deleted/);
    }
    expect(await api.json('DELETE', `/v1/proofs/${id}`)).toEqual(tombstone);

    const deletedProgram = await api.json('DELETE', `/v1/programs/${program}`);
    expect(deletedProgram.deleted_at).toEqual(expect.any(String));
    await purged(program);
    expect((await api.call('GET', `/v1/programs/${program}/download/elf`)).status).toBe(404);
    expect((await api.call('POST', `/v1/proofs?program_id=${program}`, { input: ['0x0101'] })).status).toBe(409);
  });
});
