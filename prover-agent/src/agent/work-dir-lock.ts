// One agent per work dir. An agent empties its work dir at start (but for the artifact
// cache) and keeps job files and the cache there, so a second agent on the same dir
// would delete the first's running jobs and share its cache's bookkeeping. Two agents
// on one host with the default --name and --work-dir did exactly that.
//
// The lock is a listening socket named after the work dir's real path: on Linux in the
// abstract namespace, which the kernel frees the moment its process dies (a crash
// leaves no stale lock; taking it is one atomic bind). A second agent's bind fails, and
// it asks the holder who it is (the holder answers with its pid, name and start time) to
// say so. Elsewhere (macOS development) a socket file beside the work dir stands in, a
// stale one removed when nothing answers on it.
import { createHash } from 'node:crypto';
import { mkdirSync, realpathSync, rmSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { dirname, join } from 'node:path';

export class WorkDirBusyError extends Error {}

export interface WorkDirLock {
  release(): Promise<void>;
}

interface Holder {
  pid: number;
  name: string;
  since: string;
}

function socketPath(workDir: string): string {
  const digest = createHash('sha256').update(realpathSync(workDir)).digest('hex').slice(0, 32);
  return process.platform === 'linux' ? `\0prover-agent/work-dir/${digest}` : join(dirname(workDir), `.prover-agent-${digest}.lock`);
}

function listen(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** What the lock's holder says of itself; undefined when nothing answers. */
function askHolder(path: string): Promise<Holder | undefined> {
  return new Promise((resolve) => {
    let text = '';
    const socket = connect(path);
    socket.setTimeout(2_000, () => socket.destroy());
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (text += d));
    socket.on('error', () => resolve(undefined));
    socket.on('close', () => {
      try {
        resolve(JSON.parse(text) as Holder);
      } catch {
        resolve(undefined);
      }
    });
  });
}

/** Takes `workDir` (created if missing) for this agent, or throws WorkDirBusyError naming the agent that has it. */
export async function lockWorkDir(workDir: string, name: string): Promise<WorkDirLock> {
  mkdirSync(workDir, { recursive: true });
  const path = socketPath(workDir);
  const me: Holder = { pid: process.pid, name, since: new Date().toISOString() };
  const server = createServer((socket) => socket.end(JSON.stringify(me)));
  server.unref(); // the lock never keeps the agent alive
  try {
    await listen(server, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    const holder = await askHolder(path);
    if (!holder && process.platform !== 'linux') {
      rmSync(path, { force: true }); // a socket file its dead agent left
      return lockWorkDir(workDir, name);
    }
    const who = holder ? `prover-agent "${holder.name}" (pid ${holder.pid}, running since ${holder.since})` : 'another prover-agent';
    throw new WorkDirBusyError(
      `the work dir ${workDir} is in use by ${who}: each agent on a host needs its own --name (its work dir is then ~/.prover-agent/<name>) or its own --work-dir`,
    );
  }
  return { release: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
