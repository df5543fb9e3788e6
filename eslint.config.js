// Lint: a few type-aware rules that catch real bugs, not style (Prettier owns style,
// .prettierrc.json). Run by `npm test` (`npm run lint`) over the Worker, the agent,
// the tests and the tools; every file is checked against the tsconfig that owns it.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['build/**', 'test-artifacts/**', '.wrangler/**', '**/node_modules/**', 'migrations/**'] },
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: {
        // Each file is typed by the tsconfig.json nearest to it (src, the console's
        // client, prover-agent, test, test/worker, test/bench/geo/worker).
        projectService: { allowDefaultProject: ['*.js'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A promise nobody awaits loses its error (and, in a Worker, may be cut off when
      // the response is sent): await it, return it, or hand it to waitUntil / `void` it
      // on purpose.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/only-throw-error': 'error',
      // Casts that tell the compiler to stop checking: a double assertion through
      // `unknown`, or `as never`. Type the value (a zod parse, a typed batch) instead.
      'no-restricted-syntax': [
        'error',
        {
          selector: 'TSAsExpression > TSAsExpression[typeAnnotation.type="TSUnknownKeyword"]',
          message: '`as unknown as T` turns type checking off: give the value its type where it is made.',
        },
        {
          selector: 'TSAsExpression[typeAnnotation.type="TSNeverKeyword"]',
          message: '`as never` turns type checking off: give the value its type where it is made.',
        },
        {
          // Hono's `c.var` is a getter that copies every variable of the request into a new
          // object at each read (hono/dist/context.js, Object.fromEntries): ~0.1 ms of a
          // GET's CPU (bench:api --profile). `c.get(name)` reads one from its Map.
          selector: 'MemberExpression[object.name="c"][property.name="var"]',
          message: "`c.var` copies all of the request's variables at each read: use `c.get('name')`.",
        },
      ],
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
      // Unused code.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      'no-unused-private-class-members': 'error',
      'no-unreachable': 'error',
      'no-fallthrough': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
    },
  },
  {
    // Tests hand the code under test partial doubles of its own collaborators (an agent's
    // service client, a D1 wrapper that counts calls): a cast through `unknown` is how a
    // partial object stands in for a whole one. Product code gets no such pass.
    // Their stand-in HTTP services answer from async handlers: a rejection there fails
    // the test run, which is what a test wants.
    files: ['test/**'],
    rules: {
      'no-restricted-syntax': 'off',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
    },
  },
);
