// The layering of the code, checked on every `npm test` (`npm run lint:deps`):
// dependency-cruiser reads every import (type-only ones too) of the Worker (src/),
// the agent (prover-agent/src/) and the Worker's tests (test/worker/), and fails on
// any of the rules below. README "Repository layout" describes the layers.
//
// The Worker, top to bottom; a module may import its own layer and the ones below:
//
//   entry       src/index.ts, src/app.ts          the Worker's handlers; the Hono app, which
//                                                 mounts each feature's routes
//   features    src/features/<resource>/,         one folder per resource: its routes (api.ts,
//               src/console/, src/admin/          console.ts), data, schemas; the console's
//                                                 pages; the operator's statements
//   jobs        src/jobs                          the job state machine, the job kinds
//                                                 (src/jobs/kinds), dispatch, logs, the sweep:
//                                                 no HTTP (it never imports hono)
//   middleware  src/middleware, src/app-env.ts    request plumbing: API keys, idempotency, rate limits;
//                                                 the Hono context's type (it names what they set)
//   lib         src/lib                           utilities (bytes, crypto, ids, errors, bodies,
//                                                 multipart, input scanning, ELF, paging)
//   auth        src/auth                          the permissions table (roles, actions, key scopes)
//   base        src/db, src/env.ts                the schema, D1 sessions and batches, the
//                                                 bindings and queue messages
//
// Within features: a feature may use another's data and schemas, never its routes; only
// the app mounts routes.
// src/tools (the operator's commands, Node) may import any of them; nothing imports it.
// The agent, top to bottom: cli → commands → agent → engine → protocol, with lib
// (the child-process runner) at the bottom.
// Between the two, only the protocol: the Worker imports `prover-agent/protocol`
// (prover-agent/src/protocol.ts and its own modules, prover-agent/src/protocol/),
// which imports nothing outside itself; the agent never imports the Worker.

/** The Worker's layers, top first: [name, path pattern]. */
const WORKER_LAYERS = [
  ['entry', '^src/(index|app)\\.ts$'],
  ['features', '^src/(features|console|admin)/'],
  ['jobs', '^src/jobs/'],
  ['middleware', '^src/(middleware/|app-env\\.ts$)'],
  ['lib', '^src/lib/'],
  ['auth', '^src/auth/'],
  ['base', '^src/(db/|env\\.ts$)'],
];

/** A feature's route modules: what only the app mounts. */
const ROUTES = '^src/features/[^/]+/(api|console)(\\.ts$|/)';

const PROTOCOL = '^prover-agent/src/protocol(\\.ts$|/)';

/** The agent's layers, top first. The protocol has a stricter rule of its own below (it stands alone). */
const AGENT_LAYERS = [
  ['agent-cli', '^prover-agent/src/cli\\.ts$'],
  ['agent-commands', '^prover-agent/src/commands/'],
  ['agent-daemon', '^prover-agent/src/agent/'],
  ['agent-engine', '^prover-agent/src/engine/'],
  ['agent-protocol', PROTOCOL],
  ['agent-lib', '^prover-agent/src/lib/'],
];

/** One rule per layer but the top one: it imports nothing of the layers above it. */
const layerRules = (layers) =>
  layers.slice(1).map(([name, path], at) => ({
    name: `layer-${name}`,
    comment: `${name} (${path}) imports only its own layer and the ones below it: ${layers
      .slice(at + 1)
      .map(([n]) => n)
      .join(', ')}`,
    severity: 'error',
    from: { path },
    to: { path: layers.slice(0, at + 1).map(([, p]) => p) },
  }));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import circle, type-only imports included: every module can be read after the ones it imports.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...layerRules(WORKER_LAYERS),
    ...layerRules(AGENT_LAYERS),
    {
      name: 'routes-mounted-by-the-app',
      comment: "A feature's routes (api.ts, console.ts) are mounted by src/app.ts; nothing else below it imports them.",
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/(app|index)\\.ts$', '^src/features/'] },
      to: { path: ROUTES },
    },
    {
      name: 'feature-routes-are-its-own',
      comment: "A feature may use another feature's data and schemas, never its routes.",
      severity: 'error',
      from: { path: '^src/features/([^/]+)/' },
      to: { path: ROUTES, pathNot: '^src/features/$1/' },
    },
    {
      name: 'jobs-speak-no-http',
      comment: 'The job state machine and its kinds answer no request: nothing in src/jobs imports hono.',
      severity: 'error',
      from: { path: '^src/jobs/' },
      to: { path: '(^|/)node_modules/(hono|@hono)/' },
    },
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
      to: { path: '^prover-agent/src/', pathNot: PROTOCOL },
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
      name: 'not-to-unresolvable',
      comment: 'Every import resolves (a typo in a path is not a dependency); the runtime’s own cloudflare: modules are workerd’s.',
      severity: 'error',
      from: { path: '^(src|prover-agent/src)/' },
      to: { couldNotResolve: true, pathNot: '^cloudflare:' },
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
