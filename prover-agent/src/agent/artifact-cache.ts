// Keeps the input files other jobs share (a program's ELF, VMEXE and baseline, child
// proofs: protocol ClaimedJob.shared_artifacts) between jobs, so a program proven many
// times is fetched once per host, not once per proof.
//
// - A file is downloaded under a temporary name and renamed into place: a crash never
//   leaves a partial file under a cache name, and start-up removes the leftovers.
// - Two jobs that want the same file at once share one download.
// - A job gets a hard link to the cached file (a copy where links cannot be made), so
//   evicting a file a job still reads is safe: the job's link keeps its bytes. Cached
//   files are read-only, so an engine cannot change the copy the next job gets.
// - Past its size, the least recently used files are evicted. A file bigger than the
//   whole cache is used for its job and not kept.
import { createHash, randomBytes } from 'node:crypto';
import { chmod, copyFile, link, mkdir, readdir, rename, rm, stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from './log.ts';

interface Entry {
  size: number;
  /** The cache's clock at the file's last use. */
  usedAt: number;
}

export type CacheOutcome = 'hit' | 'miss' | 'off';

export class ArtifactCache {
  private readonly entries = new Map<string, Entry>();
  private readonly downloads = new Map<string, Promise<boolean>>();
  /** Recency order: each use takes the next tick (clock time can tie within a millisecond). */
  private clock = 0;
  private bytes = 0;
  private readonly dir: string;
  private readonly maxBytes: number;
  private readonly log: Logger;

  /** `maxBytes` 0 turns the cache off: every file is downloaded for its job. */
  constructor(dir: string, maxBytes: number, log: Logger) {
    this.dir = dir;
    this.maxBytes = maxBytes;
    this.log = log;
  }

  /** Reads what an earlier run left: its files count against the size; partial downloads are removed. */
  async open(): Promise<void> {
    if (this.maxBytes === 0) return;
    await mkdir(this.dir, { recursive: true });
    const found: { name: string; size: number; mtimeMs: number }[] = [];
    for (const name of await readdir(this.dir)) {
      const path = join(this.dir, name);
      if (!/^[0-9a-f]{64}$/.test(name)) {
        await rm(path, { recursive: true, force: true });
        continue;
      }
      const { size, mtimeMs } = await stat(path);
      found.push({ name, size, mtimeMs });
    }
    // A file's time is its last use (linkOut touches it): the recency order of the last run.
    for (const f of found.sort((a, b) => a.mtimeMs - b.mtimeMs)) {
      this.entries.set(f.name, { size: f.size, usedAt: ++this.clock });
      this.bytes += f.size;
    }
    await this.evict();
    this.log.info('artifact cache open', { dir: this.dir, files: this.entries.size, bytes: this.bytes, max_bytes: this.maxBytes });
  }

  /**
   * Puts the file `id` names at `dest`: from the cache, or by `download(path)` (which
   * writes the whole file to `path`) and then kept for the next job.
   */
  async provide(id: string, dest: string, download: (path: string) => Promise<void>): Promise<CacheOutcome> {
    if (this.maxBytes === 0) {
      await download(dest);
      return 'off';
    }
    const name = createHash('sha256').update(id).digest('hex');
    if (this.entries.has(name) && (await this.linkOut(name, dest))) return 'hit';
    let pending = this.downloads.get(name);
    const mine = !pending;
    if (!pending) {
      pending = this.fetchInto(name, download, dest).finally(() => this.downloads.delete(name));
      this.downloads.set(name, pending);
    }
    let kept: boolean;
    try {
      kept = await pending;
    } catch (err) {
      if (mine) throw err;
      kept = false; // another job's download failed (that job may have been canceled)
    }
    if (mine && !kept) return 'miss'; // too big to keep: the download went straight to `dest`
    // Kept: link it. Not kept, or evicted at once by a burst: fetch it for this job alone.
    if (!(await this.linkOut(name, dest))) await download(dest);
    return 'miss';
  }

  /** Downloads a file into the cache; a file too big to keep goes to `dest` instead (false). */
  private async fetchInto(name: string, download: (path: string) => Promise<void>, dest: string): Promise<boolean> {
    const tmp = join(this.dir, `${name}.${randomBytes(4).toString('hex')}.tmp`);
    try {
      await download(tmp);
      const { size } = await stat(tmp);
      if (size > this.maxBytes) {
        await rename(tmp, dest).catch(() => copyFile(tmp, dest));
        return false;
      }
      // Read-only: a job's link is the cache's own file, so nothing a job runs may change it.
      await chmod(tmp, 0o444);
      await rename(tmp, join(this.dir, name));
      const old = this.entries.get(name);
      if (old) this.bytes -= old.size;
      this.entries.set(name, { size, usedAt: ++this.clock });
      this.bytes += size;
      await this.evict(name);
      return true;
    } finally {
      await rm(tmp, { force: true });
    }
  }

  /** Links (or copies) a cached file to `dest`; false when it is not there after all. */
  private async linkOut(name: string, dest: string): Promise<boolean> {
    const entry = this.entries.get(name);
    if (!entry) return false;
    const path = join(this.dir, name);
    try {
      await link(path, dest).catch(async (err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') throw err;
        await copyFile(path, dest); // another file system, or links not allowed
      });
    } catch {
      this.forget(name);
      return false;
    }
    entry.usedAt = ++this.clock;
    // The order survives a restart: start-up reads it back from the files' times.
    const now = new Date();
    void utimes(path, now, now).catch(() => {});
    return true;
  }

  private forget(name: string): void {
    const entry = this.entries.get(name);
    if (!entry) return;
    this.entries.delete(name);
    this.bytes -= entry.size;
  }

  /** Removes least recently used files until the cache fits (never `keep`, just added). */
  private async evict(keep?: string): Promise<void> {
    if (this.bytes <= this.maxBytes) return;
    const oldest = [...this.entries].filter(([name]) => name !== keep).sort((a, b) => a[1].usedAt - b[1].usedAt);
    for (const [name] of oldest) {
      if (this.bytes <= this.maxBytes) break;
      this.forget(name);
      await rm(join(this.dir, name), { force: true });
    }
  }

  stats() {
    return { files: this.entries.size, bytes: this.bytes, max_bytes: this.maxBytes };
  }
}
