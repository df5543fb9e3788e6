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
import { pathToFileURL } from 'node:url';
import { ROOT } from '../../src/tools/wrangler.ts';
import { baselineAdapter } from './geo/baseline.ts';
import { benchCli } from './cli.ts';
import { currentAdapter } from './geo/current.ts';
import { benchTree, HELLO_ELF, type BenchOptions, type Children } from './geo/measure.ts';
import { header, IDLE_LEGEND, idleTable, routeLegend, routeTable, type Column } from './geo/report.ts';
import { describeWorkingTree, extractCommit, resolveCommit } from './geo/source.ts';
import type { TreeAdapter } from './geo/tree.ts';

/** Today's code: the commit before the fleet's scoped tokens, sealing and quotas (issue 30's "before the last round"). */
const DEFAULT_BASELINE = 'a29c62b3d6852176fdb43746fa96e4970420ef4c';

const usage = `usage: npm run bench:geo -- [flags]
  --requests N       measured requests per route (default 20)
  --warmup N         unmeasured requests per route first (default 2)
  --primary-ms MS    simulated round trip to the D1 primary (default 150)
  --replica-ms MS    simulated round trip to a D1 read replica (default 5)
  --idle-seconds S   idle-fleet window (default 60; 0 skips the idle fleet)
  --agents K         idle agents (default 4; 0 skips the idle fleet)
  --baseline REVS    the "today" commit, or several, comma-separated, each its own column
                     (default ${DEFAULT_BASELINE.slice(0, 7)}; any commit with bench:geo, or 7e171c74)
  --only WHICH       current or baseline: run one tree only
  -h, --help         this text`;

const cli = benchCli('bench:geo', usage, ['requests', 'warmup', 'primary-ms', 'replica-ms', 'idle-seconds', 'agents', 'baseline', 'only']);

const opts: BenchOptions = {
  requests: cli.number('requests', 20, 1),
  warmup: cli.number('warmup', 2, 0),
  primaryMs: cli.number('primary-ms', 150, 0, false),
  replicaMs: cli.number('replica-ms', 5, 0, false),
  idleSeconds: cli.number('idle-seconds', 60, 0, false),
  agents: cli.number('agents', 4, 0),
  settleSeconds: 10,
};
const only = cli.string('only');
if (only !== undefined && only !== 'current' && only !== 'baseline') cli.fail('--only must be current or baseline');
const baselineRevs = (cli.string('baseline') ?? DEFAULT_BASELINE).split(',').filter(Boolean);

const log = (msg: string) => process.stderr.write(`bench:geo: ${msg}\n`);

/**
 * The adapter of an extracted tree: its own test/bench/geo/current.ts when it has one
 * (that tree's protocol and agent flags, as its own bench ran them), else the one pinned
 * to the first baseline's shapes (./geo/baseline.ts, commit 7e171c74). Only the adapter
 * is the tree's: the measuring is this tree's, so both columns are measured alike.
 */
async function treeAdapter(root: string): Promise<TreeAdapter> {
  const own = path.join(root, 'test', 'bench', 'geo', 'current.ts');
  if (!existsSync(own)) return baselineAdapter(root);
  const mod = (await import(pathToFileURL(own).href)) as { currentAdapter?: () => TreeAdapter };
  if (typeof mod.currentAdapter !== 'function') throw new Error(`${own} has no currentAdapter(): not a tree this bench can run`);
  return mod.currentAdapter();
}

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
  const bases = only === 'current' ? [] : await Promise.all(baselineRevs.map((rev) => resolveCommit(ROOT, rev)));
  const workDir = (dir = await mkdtemp(path.join(tmpdir(), 'zk-bench-geo-')));

  const trees: { title: string; description: string; dir: string; adapter: () => Promise<TreeAdapter> }[] = [];
  for (const base of bases) {
    const short = base.hash.slice(0, 7);
    const root = path.join(workDir, `baseline-${short}`);
    trees.push({
      title: `today (${short})`,
      description: `today = the baseline, ${short} "${base.subject}"`,
      dir: path.join(workDir, `baseline-${short}-stack`),
      adapter: async () => {
        log(`today: extracting ${base.hash.slice(0, 12)} into ${root}`);
        await extractCommit(ROOT, base.hash, root);
        return treeAdapter(root);
      },
    });
  }
  if (only !== 'baseline') {
    const wt = await describeWorkingTree(ROOT);
    trees.push({
      title: `now (${wt.head}${wt.dirty ? '+' : ''})`,
      description: `now = the working tree, at ${wt.head}${wt.dirty ? ' with uncommitted changes (+)' : ''}`,
      dir: path.join(workDir, 'current-stack'),
      adapter: async () => currentAdapter(),
    });
  }

  const columns: Column[] = [];
  for (const tree of trees) {
    const name = tree.title.split(' ')[0];
    const treeLog = (msg: string) => log(`${name}: ${msg}`);
    const adapter = await tree.adapter();
    treeLog('building assets');
    await adapter.buildAssets();
    columns.push({
      title: tree.title,
      description: tree.description,
      vars: adapter.workerVars,
      result: await benchTree(adapter, tree.dir, opts, children, treeLog),
    });
  }

  console.log(`\n${header(opts, columns)}\n`);
  console.log(routeTable(columns));
  console.log(`\n${routeLegend(opts)}`);
  for (const c of columns) for (const r of c.result.routes) for (const note of r.notes) console.log(`note (${c.title}): ${note}`);
  if (columns.some((c) => c.result.idle)) {
    const idle = columns.find((c) => c.result.idle)!.result.idle!;
    console.log(
      `\nD1 statements per idle agent per minute: ${idle.agents} agent${idle.agents === 1 ? '' : 's'}, no jobs, each tree's agent CLI with its deployed polling defaults, ${opts.idleSeconds} s window\n`,
    );
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
