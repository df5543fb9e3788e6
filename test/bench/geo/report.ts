// npm run bench:geo: the printed tables.
import type { BenchOptions, GlobalCounts, RouteResult, StatementCounts, TreeResult } from './measure.ts';

export interface Column {
  /** Over the tree's columns, e.g. "today (7e171c7)". */
  title: string;
  /** In the header, e.g. 'today = 7e171c7 "input scan: ..." (the baseline)'. */
  description: string;
  /** Worker vars the bench set on the tree's stack (TreeAdapter.workerVars). */
  vars: Record<string, string>;
  result: TreeResult;
}

/** Targets of the data-path rewrite, as the team reads the table against them. */
export const ROUTE_TARGETS: Record<string, string> = {
  'GET proof': 'P 0, R ≤ 1',
  'GET program': 'P 0, R ≤ 1',
  'list proofs': 'P 0, R ≤ 1',
  'POST proofs': 'P 1',
  claim: '1',
  heartbeat: '',
  'POST programs': '',
};
export const IDLE_WRITE_TARGET = '≤ 1';
/** Issue 30: an idle agent costs the primary its presence and nothing more. */
export const IDLE_PRIMARY_TARGET = '≤ 1';

export function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** "2" when every request said 2, "1–2" when they differed. */
function span(values: number[]): string {
  if (values.length === 0) return '–';
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  return lo === hi ? String(lo) : `${lo}–${hi}`;
}

function routeCells(r: RouteResult | undefined): string[] {
  if (!r) return ['', '', '', '', '', ''];
  const ms = r.samples.map((s) => s.ms).sort((a, b) => a - b);
  const after = span(r.samples.map((s) => s.offPath));
  return [
    span(r.samples.map((s) => s.primarySeq)),
    span(r.samples.map((s) => s.replicaSeq)),
    span(r.samples.map((s) => s.calls)),
    after === '0' ? '0' : `+${after}`,
    percentile(ms, 0.5).toFixed(0),
    percentile(ms, 0.99).toFixed(0),
  ];
}

/** Lays out rows of cells: the first column left-aligned, the others right-aligned; '|' cells stay as separators. */
function layout(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => (i === 0 || i === r.length - 1 ? cell.padEnd(widths[i]) : cell === '|' ? '|' : cell.padStart(widths[i])))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function routeTable(columns: Column[]): string {
  const names = columns[0].result.routes.map((r) => r.route);
  const sub = ['P seq', 'R seq', 'calls', 'after', 'p50 ms', 'p99 ms'];
  const head = ['route', ...columns.flatMap(() => ['|', ...sub]), '|', 'target'];
  const body = names.map((name) => [
    name,
    ...columns.flatMap((c) => ['|', ...routeCells(c.result.routes.find((r) => r.route === name))]),
    '|',
    ROUTE_TARGETS[name] ?? '',
  ]);
  const table = layout([head, ...body]).split('\n');
  // Each tree's title over its group of columns.
  const bars = [...table[0].matchAll(/\|/g)].map((m) => m.index);
  let title = '';
  columns.forEach((c, i) => (title = title.padEnd(bars[i]) + `| ${c.title}`));
  title = title.padEnd(bars[columns.length]) + '|';
  return [title, ...table].join('\n');
}

const perAgentMinute = (n: number, agents: number, seconds: number) => (n / agents / (seconds / 60)).toFixed(1);

function idleCells(
  result: TreeResult,
  pick: (c: GlobalCounts) => StatementCounts,
  what: 'reads' | 'writes' | 'primary calls' | 'primary statements',
): string {
  const idle = result.idle;
  if (!idle) return '–';
  const s = pick(idle.counts);
  const f = (n: number) => perAgentMinute(n, idle.agents, idle.windowSeconds);
  if (what === 'writes') return f(s.writes.primary + s.writes.replica);
  if (what === 'primary calls') return f(s.calls.primary);
  if (what === 'primary statements') return f(s.reads.primary + s.writes.primary);
  return `${f(s.reads.primary + s.reads.replica)} (P ${f(s.reads.primary)}, R ${f(s.reads.replica)})`;
}

function sweepCell(result: TreeResult): string {
  const s = result.idle?.sweep;
  if (!s) return '–';
  const p = s.product;
  return `${p.reads.primary + p.reads.replica} / ${p.writes.primary + p.writes.replica}`;
}

export function idleTable(columns: Column[]): string {
  const rows: [string, (r: TreeResult) => string, string][] = [
    ['product reads (primary, replica)', (r) => idleCells(r, (c) => c.product, 'reads'), ''],
    ['product writes', (r) => idleCells(r, (c) => c.product, 'writes'), IDLE_WRITE_TARGET],
    ['product round trips to the primary', (r) => idleCells(r, (c) => c.product, 'primary calls'), ''],
    ['product statements on the primary', (r) => idleCells(r, (c) => c.product, 'primary statements'), IDLE_PRIMARY_TARGET],
    ['local queue emulation reads *', (r) => idleCells(r, (c) => c.emulation, 'reads'), ''],
    ['local queue emulation writes *', (r) => idleCells(r, (c) => c.emulation, 'writes'), ''],
    ['one cron sweep, whole fleet: reads / writes', sweepCell, ''],
  ];
  return layout([
    ['', ...columns.map((c) => c.title), 'target'],
    ...rows.map(([label, cell, target]) => [label, ...columns.map((c) => cell(c.result)), target]),
  ]);
}

export function header(opts: BenchOptions, columns: Column[]): string {
  return [
    `D1 round trips per request${columns.length > 1 ? ', baseline vs working tree' : ''} (npm run bench:geo)`,
    `Model: the Worker runs next to the caller; each D1 call sleeps ${opts.primaryMs} ms when it goes to the primary (far away)`,
    `and ${opts.replicaMs} ms when it goes to a read replica (near), then the local D1 answers. Writes and plain-binding reads go to the`,
    `primary; reads through a D1 session go to a replica (the first call of a 'first-primary' session: the primary).`,
    `${opts.requests} measured requests per route after ${opts.warmup} warm-up, sent one at a time by one client, on wrangler dev (local workerd, D1, R2),`,
    `one tree after the other, each on its own fresh local state.`,
    ...columns.map(
      (c) =>
        `  ${c.description}${
          Object.keys(c.vars).length
            ? `; Worker vars ${Object.entries(c.vars)
                .map(([k, v]) => `${k}=${v}`)
                .join(' ')}`
            : ''
        }`,
    ),
  ].join('\n');
}

export function routeLegend(opts: BenchOptions): string {
  return [
    'P seq / R seq: sequential D1 round trips the response waited for, to the primary / to a replica: the longest',
    '  chain of its D1 calls in which each call started after the previous one ended (calls in flight together count',
    '  once). calls: all D1 calls the response waited for. after: D1 calls off the response path (handed to',
    '  ctx.waitUntil); the idle figures count them, these columns do not. p50 / p99: latency from sending the request',
    `  to having read the whole answer${opts.requests < 100 ? ` (with ${opts.requests} requests, p99 is the slowest)` : ''}. A cell "1–2": the requests differed.`,
    '  target: what the data-path rewrite aims for (P: primary round trips, R: replica round trips).',
  ].join('\n');
}

export const IDLE_LEGEND = [
  'Statements (not calls: a batch of 8 statements is 8) of every handler over the window, including work after the',
  'response, divided by agents and minutes. Writes are statements that may write (INSERT/UPDATE/DELETE...), whether',
  'or not they changed a row. * The local stack emulates the Cloudflare Queues pull API in the Worker, stored in D1',
  '(its routes under /client/v4 and its table emulated_queue_messages); in production the queue is not D1, so those',
  'rows are shown apart. The cron sweep runs once a minute for the whole fleet (wrangler dev does not run crons; the',
  'bench fires one); it is not part of the per-agent figures.',
].join('\n');
