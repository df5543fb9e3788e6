// The agent's artifact cache on a real file system: what is kept, shared, evicted and
// found again after a restart.
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ArtifactCache } from '../../prover-agent/src/agent/artifact-cache.ts';
import { createLogger } from '../../prover-agent/src/agent/log.ts';

let root: string;
const log = createLogger('error');
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'artifact-cache-'));
});
afterEach(() => rm(root, { recursive: true, force: true }));

/** A download of `content` that counts its calls, optionally held until released. */
function source(content: string) {
  let release: () => void = () => {};
  const gate = { held: false, opened: Promise.resolve() };
  const d = {
    calls: 0,
    hold() {
      gate.held = true;
      gate.opened = new Promise((r) => (release = r));
    },
    release: () => release(),
    fetch: async (path: string) => {
      d.calls++;
      if (gate.held) await gate.opened;
      await writeFile(path, content);
    },
  };
  return d;
}

const dest = (name: string) => join(root, name);

describe('artifact cache', () => {
  it('downloads a file once; later jobs get the same bytes from the cache', async () => {
    const cache = new ArtifactCache(join(root, 'cache'), 1024, log);
    await cache.open();
    const elf = source('elf bytes');
    expect(await cache.provide('programs/p1/program.elf', dest('a'), elf.fetch)).toBe('miss');
    expect(await cache.provide('programs/p1/program.elf', dest('b'), elf.fetch)).toBe('hit');
    expect(elf.calls).toBe(1);
    expect(await readFile(dest('a'), 'utf8')).toBe('elf bytes');
    expect(await readFile(dest('b'), 'utf8')).toBe('elf bytes');
    expect(cache.stats()).toEqual({ files: 1, bytes: 9, max_bytes: 1024 });
  });

  it('jobs that want the same file at once share one download', async () => {
    const cache = new ArtifactCache(join(root, 'cache'), 1024, log);
    await cache.open();
    const elf = source('shared');
    elf.hold();
    const both = Promise.all([cache.provide('k', dest('a'), elf.fetch), cache.provide('k', dest('b'), elf.fetch)]);
    await new Promise((r) => setTimeout(r, 20));
    elf.release();
    expect((await both).sort()).toEqual(['miss', 'miss']);
    expect(elf.calls).toBe(1);
    expect(await readFile(dest('b'), 'utf8')).toBe('shared');
  });

  it('when the shared download fails, the other job fetches its own', async () => {
    const cache = new ArtifactCache(join(root, 'cache'), 1024, log);
    await cache.open();
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    const failing = async () => {
      await held;
      throw new Error('canceled');
    };
    const first = cache.provide('k', dest('a'), failing);
    const good = source('fine');
    const second = cache.provide('k', dest('b'), good.fetch);
    release();
    await expect(first).rejects.toThrow('canceled');
    expect(await second).toBe('miss');
    expect(await readFile(dest('b'), 'utf8')).toBe('fine');
    expect(await readdir(join(root, 'cache'))).toEqual([]); // no partial file left behind
  });

  it('evicts the least recently used past its size; a file a job holds keeps its bytes', async () => {
    const cache = new ArtifactCache(join(root, 'cache'), 10, log);
    await cache.open();
    await cache.provide('a', dest('a1'), source('aaaa').fetch);
    await cache.provide('b', dest('b1'), source('bbbb').fetch);
    await cache.provide('a', dest('a2'), source('never').fetch); // a is now the most recent
    const c = source('cccc');
    await cache.provide('c', dest('c1'), c.fetch); // 12 bytes > 10: b goes
    expect(cache.stats()).toMatchObject({ files: 2, bytes: 8 });
    const b = source('bbbb');
    expect(await cache.provide('b', dest('b2'), b.fetch)).toBe('miss');
    expect(b.calls).toBe(1);
    expect(await readFile(dest('b1'), 'utf8')).toBe('bbbb'); // the first job's link outlived the eviction
  });

  it('a file bigger than the whole cache is fetched for its job and not kept', async () => {
    const cache = new ArtifactCache(join(root, 'cache'), 4, log);
    await cache.open();
    const big = source('too big to keep');
    expect(await cache.provide('big', dest('a'), big.fetch)).toBe('miss');
    expect(await readFile(dest('a'), 'utf8')).toBe('too big to keep');
    expect(cache.stats()).toMatchObject({ files: 0, bytes: 0 });
    await cache.provide('big', dest('b'), big.fetch);
    expect(big.calls).toBe(2); // each job downloads it straight to its own directory
  });

  it('finds its files again after a restart and removes partial downloads', async () => {
    const dir = join(root, 'cache');
    const first = new ArtifactCache(dir, 1024, log);
    await first.open();
    await first.provide('k', dest('a'), source('kept').fetch);
    await writeFile(join(dir, 'deadbeef.1234.tmp'), 'partial');
    const second = new ArtifactCache(dir, 1024, log);
    await second.open();
    expect(second.stats()).toMatchObject({ files: 1, bytes: 4 });
    expect((await readdir(dir)).some((n) => n.endsWith('.tmp'))).toBe(false);
    const again = source('other');
    expect(await second.provide('k', dest('b'), again.fetch)).toBe('hit');
    expect(again.calls).toBe(0);
  });

  it('size 0 turns it off: every job downloads, nothing is written to its directory', async () => {
    const cache = new ArtifactCache(join(root, 'cache'), 0, log);
    await cache.open();
    const elf = source('x');
    expect(await cache.provide('k', dest('a'), elf.fetch)).toBe('off');
    expect(await cache.provide('k', dest('b'), elf.fetch)).toBe('off');
    expect(elf.calls).toBe(2);
    await expect(stat(join(root, 'cache'))).rejects.toThrow();
  });
});
