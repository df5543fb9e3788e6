#!/usr/bin/env node
// Entry point of the `prover-agent` command. In this repository the sources are
// TypeScript run directly by Node's type stripping (Node >= 22.18), with no build step;
// in the packaged agent (npm run build:agent, docs/gpu-hosts.md) they are one bundle,
// dist/cli.js, beside this file's directory. Either way the Node version is checked
// first, in plain JavaScript, and `--version` answers on any Node.
import { existsSync, readFileSync } from 'node:fs';
import { requireNode } from './node-version.js';

const manifest = new URL('../package.json', import.meta.url);
const arg = process.argv[2];
if (arg === '--version' || arg === '-v' || arg === 'version') {
  // A packaged agent also names the commit it was built from (src/tools/build-agent.ts).
  const pkg = JSON.parse(readFileSync(manifest, 'utf8'));
  process.stdout.write(`prover-agent ${pkg.version}${pkg.build ? ` (${pkg.build.commit})` : ''}\n`);
} else {
  requireNode(manifest, 'install Node 22 (docs/gpu-hosts.md)');
  const bundle = new URL('../dist/cli.js', import.meta.url);
  await import(existsSync(bundle) ? bundle.href : '../src/cli.ts');
}
