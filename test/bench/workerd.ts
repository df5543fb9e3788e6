// What the benches read of the workerd processes under them (Linux /proc): the Worker's
// process, its memory and its CPU time.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim() || 100);

/** A field of /proc/<pid>/status, in its unit (kB for Vm*). */
export const procStatus = (pid: number, field: string) =>
  Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);

/** The process's CPU time so far (utime + stime), ms. */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS; // utime, stime (fields 14, 15)
}

/**
 * The workerd processes descending from this one, the largest (VmRSS) first. Under a
 * bench's wrangler dev there are two: wrangler's own proxy (a Miniflare instance of its
 * own, passing requests on) and the Worker's, which also hosts the local D1 and R2 and
 * so holds far more memory once they have been used: the first.
 */
export function workerdPids(): number[] {
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid=,comm='], { encoding: 'utf8' })
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((r) => r.length >= 3)
    .map(([pid, ppid, comm]) => ({ pid: Number(pid), ppid: Number(ppid), comm }));
  const mine = new Set([process.pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const r of rows) if (mine.has(r.ppid) && !mine.has(r.pid)) (mine.add(r.pid), (grew = true));
  }
  const found = rows.filter((r) => mine.has(r.pid) && r.comm.startsWith('workerd')).map((r) => r.pid);
  if (found.length === 0) throw new Error('no workerd under this bench');
  return found.sort((a, b) => procStatus(b, 'VmRSS') - procStatus(a, 'VmRSS'));
}
