// Preloaded by the npm scripts that run the Worker's tools (`node --import
// ./src/tools/require-node.js src/tools/….ts`): one line, not a stack trace, when the
// Node running them is older than package.json's engines.node (on Node 20 the tools'
// TypeScript fails to load with ERR_UNKNOWN_FILE_EXTENSION). npm puts the project's own
// Node (the `node` devDependency) first on the scripts' PATH, so this speaks only when
// that one is missing: `npm install` not run, or its download failed.
import { requireNode } from '../../prover-agent/bin/node-version.js';

requireNode(new URL('../../package.json', import.meta.url), 'run `npm install` (it brings Node 22), or install Node 22');
