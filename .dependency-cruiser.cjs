// The layering of the code, checked on every `npm test` (`npm run lint:deps`):
// dependency-cruiser reads every import (type-only ones too) of the Worker (src/),
// the agent (prover-agent/src/) and the Worker's tests (test/worker/), and fails on
// any of the rules below. README "Repository layout" describes the layers.
//
// The Worker, top to bottom; a module may import its own layer and the ones below:
//
//   entry       src/index.ts, src/app.ts          the Worker's handlers and the Hono app
//   http        src/routes, src/internal,         the public API, the fleet's internal API,
//               src/console                        the console's pages
//   jobs        src/jobs                          the job state machine, the job kinds
//                                                 (src/jobs/kinds), dispatch, webhooks, events
//   middleware  src/middleware                    request plumbing: API keys, idempotency, rate limits
//   lib         src/lib, src/admin, src/app-env.ts  shared helpers, the operator's statements,
//                                                 the Hono context's type
//   base        src/db, src/env.ts,               the schema and D1 sessions, the bindings
//               src/lib/errors.ts                 and queue messages, the error vocabulary
//
// src/tools (the operator's commands, Node) may import any of them; nothing imports it.
// The agent, top to bottom: cli → commands → agent → engine → protocol, with lib
// (the child-process runner) at the bottom.
// Between the two, only the protocol: the Worker imports `prover-agent/protocol`
// (prover-agent/src/protocol.ts and its own modules, prover-agent/src/protocol/),
// which imports nothing outside itself; the agent never imports the Worker.

/** The Worker's layers, top first: [name, path pattern]. */
const LAYERS = [
  ['entry', '^src/(index|app)\\.ts$'],
  ['http', '^src/(routes|internal|console)/'],
  ['jobs', '^src/jobs/'],
  ['middleware', '^src/middleware/'],
  ['lib', '^src/(lib/(?!errors\\.ts$)|admin/|app-env\\.ts$)'],
  ['base', '^src/(db/|env\\.ts$|lib/errors\\.ts$)'],
];

/**
 * Known exceptions, by layer: imports it may make upward, each with its way out.
 * bearer() (reading an Authorization header) lives in src/internal/auth.ts and the
 * console's auth middleware uses it; it is moving to src/lib (issue 16, on another
 * branch), which ends this exception.
 */
const KNOWN_UPWARD = { middleware: '^src/internal/auth\\.ts$' };

const upward = LAYERS.slice(1).map(([name, path], at) => ({
  name: `layer-${name}`,
  comment: `${name} (${path}) imports only its own layer and the ones below it: ${LAYERS.slice(at + 1)
    .map(([n]) => n)
    .join(', ')}`,
  severity: 'error',
  from: { path },
  to: { path: LAYERS.slice(0, at + 1).map(([, p]) => p), ...(KNOWN_UPWARD[name] ? { pathNot: KNOWN_UPWARD[name] } : {}) },
}));

const AGENT = '^prover-agent/src/';
const PROTOCOL = '^prover-agent/src/protocol(\\.ts$|/)';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import circle, type-only imports included: every module can be read after the ones it imports.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...upward,
    {
      name: 'nothing-imports-tools',
      comment: "src/tools are the operator's commands (Node): the Worker never imports them.",
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/tools/' },
      to: { path: '^src/tools/' },
    },
    {
      name: 'worker-only-protocol',
      comment: 'The Worker and its tests reach the agent package only through its `prover-agent/protocol` export.',
      severity: 'error',
      from: { path: '^(src|test/worker)/' },
      to: { path: AGENT, pathNot: PROTOCOL },
    },
    {
      name: 'worker-protocol-by-name',
      comment: "The Worker imports the protocol by the package's name (`prover-agent/protocol`), never by a relative path.",
      severity: 'error',
      from: { path: '^(src|test/worker)/' },
      to: { path: PROTOCOL, dependencyTypesNot: ['aliased-workspace'] },
    },
    {
      name: 'agent-not-worker',
      comment: 'The agent never imports the Worker.',
      severity: 'error',
      from: { path: '^prover-agent/' },
      to: { path: '^src/' },
    },
    {
      name: 'protocol-stands-alone',
      comment: 'The protocol imports nothing but its own modules: no engine, no agent, no Node or Worker API, no package.',
      severity: 'error',
      from: { path: PROTOCOL },
      to: { pathNot: PROTOCOL },
    },
    {
      name: 'engine-below-agent',
      comment: "Engines know nothing of the agent that runs them, its commands or its CLI.",
      severity: 'error',
      from: { path: '^prover-agent/src/engine/' },
      to: { path: '^prover-agent/src/(agent|commands)/|^prover-agent/src/cli\\.ts$' },
    },
    {
      name: 'agent-below-commands',
      comment: 'The daemon (agent/) knows nothing of the commands that start it or the CLI.',
      severity: 'error',
      from: { path: '^prover-agent/src/agent/' },
      to: { path: '^prover-agent/src/commands/|^prover-agent/src/cli\\.ts$' },
    },
    {
      name: 'agent-lib-at-bottom',
      comment: "The agent's lib (prover-agent/src/lib: the child-process runner) imports nothing of the agent.",
      severity: 'error',
      from: { path: '^prover-agent/src/lib/' },
      to: { path: '^prover-agent/src/(agent|commands|engine|protocol)(/|\\.ts$)|^prover-agent/src/cli\\.ts$' },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'Every import resolves (a typo in a path is not a dependency).',
      severity: 'error',
      from: { path: '^(src|prover-agent/src)/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    // Type-only imports are dependencies too: they make circles and layering as real as any.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'src/tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/console/static/' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'types', 'default'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
