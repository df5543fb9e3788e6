// `npm run build:agent`: the prover-agent as a package a GPU host installs without this
// repository (docs/gpu-hosts.md): build/prover-agent-<version>.tgz, made by `npm pack`
// from build/prover-agent/, which holds
//
//   package.json        name, version, bin, engines; no dependencies (they are bundled),
//                       and the commit it was built from (`prover-agent --version` says it)
//   bin/                the entry (prover-agent.js: the Node check, then dist/cli.js)
//   dist/cli.js         the agent, its engines and its dependencies (prom-client), one
//                       ES module bundled by esbuild, for Node 22
//   dist/engine-child.js  the engine child process the agent starts (engine-process.ts),
//                       bundled on its own
//   packaging/          the systemd unit, the container recipe, a Prometheus scrape config
//
// The tarball's path is printed on stdout's last line.
import { execFileSync } from 'node:child_process';
import { build, type Plugin } from 'esbuild';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './wrangler.ts';

const AGENT = path.join(ROOT, 'prover-agent');
const OUT = path.join(ROOT, 'build', 'prover-agent');

/**
 * The agent finds its engine child beside its own module (engine-process.ts:
 * `new URL('./engine-child.ts', import.meta.url)`); in the bundle that is
 * dist/engine-child.js. The build fails if that line changes rather than ship an agent
 * whose engines cannot start.
 */
const engineChildBeside: Plugin = {
  name: 'engine-child-beside-the-bundle',
  setup(b) {
    b.onLoad({ filter: /prover-agent[\\/]src[\\/]agent[\\/]engine-process\.ts$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      const from = "new URL('./engine-child.ts', import.meta.url)";
      if (!source.includes(from)) throw new Error(`${args.path} no longer says ${from}: update src/tools/build-agent.ts`);
      return { contents: source.replace(from, "new URL('./engine-child.js', import.meta.url)"), loader: 'ts' };
    });
  },
};

export async function buildAgentPackage(): Promise<string> {
  const manifest = JSON.parse(readFileSync(path.join(AGENT, 'package.json'), 'utf8')) as {
    name: string;
    version: string;
    description: string;
    engines: { node: string };
  };
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(path.join(OUT, 'bin'), { recursive: true });
  await build({
    absWorkingDir: ROOT,
    entryPoints: { cli: path.join(AGENT, 'src', 'cli.ts'), 'engine-child': path.join(AGENT, 'src', 'agent', 'engine-child.ts') },
    outdir: path.join(OUT, 'dist'),
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    // CommonJS dependencies (prom-client) call require() for Node's modules: give the ES module one.
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    plugins: [engineChildBeside],
    logLevel: 'warning',
  });
  for (const file of ['prover-agent.js', 'node-version.js']) cpSync(path.join(AGENT, 'bin', file), path.join(OUT, 'bin', file));
  cpSync(path.join(AGENT, 'packaging'), path.join(OUT, 'packaging'), { recursive: true });
  const commit = execFileSync('git', ['-C', ROOT, 'rev-parse', '--short=12', 'HEAD'], { encoding: 'utf8' }).trim();
  const dirty = execFileSync('git', ['-C', ROOT, 'status', '--porcelain', '--', 'prover-agent'], { encoding: 'utf8' }).trim() !== '';
  writeFileSync(
    path.join(OUT, 'package.json'),
    JSON.stringify(
      {
        name: manifest.name,
        version: manifest.version,
        description: manifest.description,
        type: 'module',
        bin: { 'prover-agent': 'bin/prover-agent.js' },
        engines: manifest.engines,
        files: ['bin', 'dist', 'packaging'],
        build: { commit: dirty ? `${commit}+changes` : commit },
      },
      null,
      2,
    ) + '\n',
  );
  writeFileSync(
    path.join(OUT, 'README.md'),
    `# prover-agent ${manifest.version}\n\nThe proving service's GPU-host daemon, packaged: \`prover-agent --help\`.\n` +
      `Install, run as a service, metrics, upgrades: docs/gpu-hosts.md in the service's repository;\n` +
      `the systemd unit, the container recipe and a Prometheus scrape config are in packaging/.\n`,
  );
  const packed = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--pack-destination', path.dirname(OUT)], {
      cwd: OUT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  ) as { filename: string }[];
  return path.join(path.dirname(OUT), packed[0].filename);
}

if (import.meta.main) process.stdout.write((await buildAgentPackage()) + '\n');
