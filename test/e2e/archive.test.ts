// The archive end to end (issue 23 item 5, docs/operators.md "The archive"): a real agent proves, the
// cron sweep (wrangler dev's scheduled trigger, ARCHIVE_AFTER_DAYS 0) moves the finished
// proof out of D1 into R2, and the caller reads it back by id (the same JSON, the same proof
// file), then deletes it. (Another organization's 404: test/worker/archive.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caller, registerGuest, startStack, type Stack } from './stack.ts';

let stack: Stack;
let api: ReturnType<typeof caller>;

beforeAll(async () => {
  stack = await startStack({ vars: { ARCHIVE_AFTER_DAYS: '0' } });
  api = caller(stack);
  await stack.startAgent({ name: 'e2e-archive' });
});
afterAll(async () => stack?.stop());

const count = async (query: string) => Number((await stack.sql(query))[0].n);

describe('the archive with a real agent and the cron sweep', () => {
  it('a finished proof leaves D1, reads the same by id, downloads the same, and can still be deleted', { timeout: 300_000 }, async () => {
    const program = await registerGuest(api, stack.devConfig, 'hello.elf');
    const { id } = await api.json('POST', `/v1/proofs?program_id=${program}`, { input: ['0x0168656c6c6f'] });
    const proof = await api.waitFor(`/v1/proofs/${id}`, (p: any) => ['Succeeded', 'Failed'].includes(p.state));
    expect(proof.state).toBe('Succeeded');
    const stark = await (await api.call('GET', `/v1/proofs/${id}/proof/stark`)).text();

    // The sweep runs after the scheduled trigger's answer: fire it until the proof has moved.
    const deadline = Date.now() + 120_000;
    while ((await count(`SELECT count(*) AS n FROM archived WHERE id = '${id}'`)) === 0) {
      if (Date.now() > deadline) throw new Error(`proof ${id} not archived`);
      await stack.sweep();
      await new Promise((r) => setTimeout(r, 2000));
    }
    expect(await count(`SELECT count(*) AS n FROM proofs WHERE id = '${id}'`)).toBe(0);
    expect(await count(`SELECT count(*) AS n FROM jobs WHERE subject_id = '${id}'`)).toBe(0);

    expect(await api.json('GET', `/v1/proofs/${id}`)).toEqual(proof);
    expect(await (await api.call('GET', `/v1/proofs/${id}/proof/stark`)).text()).toBe(stark);
    expect((await api.json('GET', `/v1/proofs?program_id=${program}`)).items).toEqual([]);

    const tombstone = await api.json('DELETE', `/v1/proofs/${id}`);
    expect(tombstone).toEqual({
      ...proof,
      deleted_at: expect.any(String),
      deleted_by: expect.stringMatching(/^e2e@localhost \(API key sk_[0-9a-f]{8}…\)$/),
    });
    expect(await api.json('GET', `/v1/proofs/${id}`)).toEqual(tombstone);
    expect((await api.call('GET', `/v1/proofs/${id}/proof/stark`)).status).toBe(404);
  });
});
