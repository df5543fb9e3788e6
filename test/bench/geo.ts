// `npm run bench:geo [-- flags]`: D1 round trips per request and D1 statements per idle
// agent, for the baseline commit and for the working tree, side by side, with a simulated
// far-away primary and near read replicas (test/bench/BENCH-GEO.md). Each tree runs on
// its own local stack (wrangler dev with the tree's Worker behind a D1 latency shim,
// test/bench/geo/worker/), one after the other.
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from '../../src/tools/wrangler.ts';
import { baselineAdapter } from './geo/baseline.ts';
import { currentAdapter } from './geo/current.ts';
import { benchTree, HELLO_ELF, type BenchOptions, type Children } from './geo/measure.ts';
import { header, IDLE_LEGEND, idleTable, routeLegend, routeTable, type Column } from './geo/report.ts';
import { describeWorkingTree, extractCommit, resolveCommit } from './geo/source.ts';
import type { TreeAdapter } from './geo/tree.ts';

/** Today's code: the commit the data-path rewrite starts from. */
const DEFAULT_BASELINE = '7e171c7495def63f227e84af515ef90314e4bceb';

const usage = `usage: npm run bench:geo -- [flags]
  --requests N       measured requests per route (default 20)
  --warmup N         unmeasured requests per route first (default 2)
  --primary-ms MS    simulated round trip to the D1 primary (default 150)
  --replica-ms MS    simulated round trip to a D1 read replica (default 5)
  --idle-seconds S   idle-fleet window (default 60; 0 skips the idle fleet)
  --agents K         idle agents (default 4; 0 skips the idle fleet)
  --baseline REV     the "today" commit (default ${DEFAULT_BASELINE.slice(0, 8)})
  --only WHICH       current or baseline: run one tree only
  -h, --help         this text`;

function usageError(message: string): never {
  console.error(`bench:geo: ${message}\n${usage}`);
  process.exit(2);
}

let flags: Record<string, string | boolean | undefined>;
try {
  ({ values: flags } = parseArgs({
    options: {
      requests: { type: 'string' },
      warmup: { type: 'string' },
      'primary-ms': { type: 'string' },
      'replica-ms': { type: 'string' },
      'idle-seconds': { type: 'string' },
      agents: { type: 'string' },
      baseline: { type: 'string' },
      only: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  }));
} catch (err) {
  usageError((err as Error).message);
}
if (flags.help) {
  console.log(usage);
  process.exit(0);
}

function numberFlag(name: string, fallback: number, min: number, integer = true): number {
  const text = flags[name];
  const n = text === undefined ? fallback : Number(text);
  if (typeof text === 'string' && text.trim() === '') usageError(`--${name} needs a value`);
  if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) usageError(`--${name} must be ${integer ? 'an integer' : 'a number'} of at least ${min}`);
  return n;
}

const opts: BenchOptions = {
  requests: numberFlag('requests', 20, 1),
  warmup: numberFlag('warmup', 2, 0),
  primaryMs: numberFlag('primary-ms', 150, 0, false),
  replicaMs: numberFlag('replica-ms', 5, 0, false),
  idleSeconds: numberFlag('idle-seconds', 60, 0, false),
  agents: numberFlag('agents', 4, 0),
  settleSeconds: 10,
};
const only = flags.only as string | undefined;
if (only !== undefined && only !== 'current' && only !== 'baseline') usageError('--only must be current or baseline');
const baselineRev = (flags.baseline as string | undefined) ?? DEFAULT_BASELINE;

const log = (msg: string) => process.stderr.write(`bench:geo: ${msg}\n`);

/** Children (wrangler dev, agents) to stop however the run ends. */
const running = new Map<ChildProcess, (c: ChildProcess) => Promise<void>>();
const children: Children = {
  add: (child, stop) => void running.set(child, stop),
  remove: (child) => void running.delete(child),
};

let dir: string | undefined;
let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await Promise.all([...running].map(([child, stop]) => stop(child).catch(() => {})));
    running.clear();
    if (dir) await rm(dir, { recursive: true, force: true });
  })();
  return cleaning;
}
for (const sig of ['SIGINT', 'SIGTERM'] as const)
  process.once(sig, () => {
    log(`${sig}: stopping the stacks and removing ${dir ?? 'the temporary directory'}`);
    void cleanup().then(() => process.exit(130));
  });

async function main(): Promise<void> {
  if (!existsSync(HELLO_ELF)) throw new Error(`${path.relative(ROOT, HELLO_ELF)} is missing: build the test guests (npm run build:guests)`);
  const base = only === 'current' ? null : await resolveCommit(ROOT, baselineRev);
  dir = await mkdtemp(path.join(tmpdir(), 'zk-bench-geo-'));

  const trees: { title: string; description: string; dir: string; adapter: () => Promise<TreeAdapter> }[] = [];
  if (base) {
    const root = path.join(dir, 'baseline');
    trees.push({
      title: `today (${base.hash.slice(0, 7)})`,
      description: `today = the baseline, ${base.hash.slice(0, 7)} "${base.subject}"`,
      dir: path.join(dir, 'baseline-stack'),
      adapter: async () => {
        log(`today: extracting ${base.hash.slice(0, 12)} into ${root}`);
        await extractCommit(ROOT, base.hash, root);
        return baselineAdapter(root);
      },
    });
  }
  if (only !== 'baseline') {
    const wt = await describeWorkingTree(ROOT);
    trees.push({
      title: `now (${wt.head}${wt.dirty ? '+' : ''})`,
      description: `now = the working tree, at ${wt.head}${wt.dirty ? ' with uncommitted changes (+)' : ''}`,
      dir: path.join(dir, 'current-stack'),
      adapter: async () => currentAdapter(),
    });
  }

  const columns: Column[] = [];
  for (const tree of trees) {
    const name = tree.title.split(' ')[0]!;
    const treeLog = (msg: string) => log(`${name}: ${msg}`);
    const adapter = await tree.adapter();
    treeLog('building assets');
    await adapter.buildAssets();
    columns.push({ title: tree.title, description: tree.description, vars: adapter.workerVars, result: await benchTree(adapter, tree.dir, opts, children, treeLog) });
  }

  console.log(`\n${header(opts, columns)}\n`);
  console.log(routeTable(columns));
  console.log(`\n${routeLegend(opts)}`);
  for (const c of columns) for (const r of c.result.routes) for (const note of r.notes) console.log(`note (${c.title}): ${note}`);
  if (columns.some((c) => c.result.idle)) {
    const idle = columns.find((c) => c.result.idle)!.result.idle!;
    console.log(`\nD1 statements per idle agent per minute: ${idle.agents} agent${idle.agents === 1 ? '' : 's'}, no jobs, each tree's agent CLI with its deployed polling defaults, ${opts.idleSeconds} s window\n`);
    console.log(idleTable(columns));
    console.log(`\n${IDLE_LEGEND}`);
  }
}

main()
  .catch((err: unknown) => {
    console.error(`bench:geo: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
