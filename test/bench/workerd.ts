// The benches' view of the local runtime's processes: the workerd processes a bench's
// wrangler dev started, and the CPU each has used (utime + stime from /proc/<pid>/stat),
// which, unlike a latency, another process on a shared machine does not inflate.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim() || 100);

/** The workerd processes descending from `root` (by default this process). */
export function workerdPids(root = process.pid): number[] {
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid=,comm='], { encoding: 'utf8' })
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((r) => r.length >= 3)
    .map(([pid, ppid, comm]) => ({ pid: Number(pid), ppid: Number(ppid), comm: comm }));
  const mine = new Set([root]);
  for (let grew = true; grew;) {
    grew = false;
    for (const r of rows) if (mine.has(r.ppid) && !mine.has(r.pid)) (mine.add(r.pid), (grew = true));
  }
  return rows.filter((r) => mine.has(r.pid) && r.comm.startsWith('workerd')).map((r) => r.pid);
}

/** A field of /proc/<pid>/status, in its unit (kB for Vm*). */
export const procStatus = (pid: number, field: string) =>
  Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);

/** CPU time a process has used so far, in ms (at the clock tick's resolution). */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS; // utime, stime (fields 14, 15)
}

/** CPU time the children a process has reaped used, in ms (cutime, cstime): an agent's engine processes that have ended. */
export function reapedChildrenCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) * TICK_MS; // cutime, cstime (fields 16, 17)
}
