// The Worker's local-only settings: what `npm start`, `npm run dev` and the test stacks
// give the Worker and no deployed environment may have. They live in `.dev.vars`
// (gitignored; wrangler dev reads it beside wrangler.toml), never in wrangler.toml's
// [vars]: there a deploy would warn that an environment lacks them and invite copying
// local secrets and loopback webhooks into production. `npm run deploy` refuses every
// one of these names as a var and every one of these values anywhere
// (src/tools/deploy/preflight.ts).
//
// `node src/tools/dev-vars.ts` writes `.dev.vars` (what `npm run dev` does first).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseEnv } from 'node:util';

/** Each local-only setting, its local value, and why it exists (the comment `.dev.vars` carries). */
export const LOCAL_DEV_VARS = {
  DEV_QUEUE_EMULATION: {
    value: 'true',
    why: 'Emulates the jobs queue’s HTTP pull consumer (wrangler dev has none): the agents’ queue gateway pulls from it.',
  },
  FLEET_TOKEN_SECRET: {
    value: 'local-dev-fleet-token-secret-not-for-deployment',
    why: 'HS256 key of the agents’ queue tokens (src/features/fleet/queue-token.ts; at least 32 characters).',
  },
  DEV_PROOF_SECRET: {
    value: 'local-dev-proof-secret',
    why: 'Key that dev-engine proofs are MACed under (src/jobs/dev-proofs.ts).',
  },
  DOWNLOAD_URL_SECRET: {
    value: 'local-dev-download-secret',
    why: 'Key of the Worker-signed download links for published config keys (README "Key downloads").',
  },
  CONSOLE_JWT_SECRET: {
    value: 'local-dev-console-jwt-secret-not-for-deployment',
    why: 'HMAC key of console access tokens (JWT HS256; at least 32 characters).',
  },
  WEBHOOK_ENCRYPTION_KEY: {
    value: 'local-dev-webhook-encryption-key-not-for-deployment',
    why: 'Key the webhook endpoints’ signing secrets are encrypted under in D1 (AES-GCM; at least 32 characters).',
  },
  WEBHOOKS_ALLOW_LOOPBACK: {
    value: 'true',
    why: 'Webhooks may go to http://127.0.0.1, [::1] and localhost (deployed: https URLs of public hosts only).',
  },
  MAIL_SENDER: {
    value: 'outbox',
    why: 'Email is stored in the local D1 and read at /console/outbox, never sent.',
  },
} as const;

export type LocalDevVar = keyof typeof LOCAL_DEV_VARS;

/** The settings as the Worker sees them: name → value. */
export function localDevVars(): Record<LocalDevVar, string> {
  return Object.fromEntries(Object.entries(LOCAL_DEV_VARS).map(([name, v]) => [name, v.value])) as Record<LocalDevVar, string>;
}

const HEADER = [
  '# Local-only settings of the Worker (src/tools/dev-vars.ts): read by wrangler dev, never',
  '# deployed. Written by `npm start` and `npm run dev`; a line you change here is kept.',
];

/** Dotenv lines for these settings, each under its reason. */
export function devVarsText(names: readonly LocalDevVar[] = Object.keys(LOCAL_DEV_VARS) as LocalDevVar[]): string {
  return names.map((name) => `# ${LOCAL_DEV_VARS[name].why}\n${name}=${JSON.stringify(LOCAL_DEV_VARS[name].value)}\n`).join('');
}

/** The names a dotenv file sets. */
function namesIn(text: string): Set<string> {
  return new Set([...text.matchAll(/^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=/gm)].map((m) => m[1]));
}

/**
 * The local-only settings a local Worker runs with when `dotfile` is its settings file:
 * the file's values over the local ones (what wrangler dev makes of it).
 */
export function localSettings(dotfile: string): Record<string, string> {
  const own = existsSync(dotfile) ? parseEnv(readFileSync(dotfile, 'utf8')) : {};
  return { ...localDevVars(), ...(own as Record<string, string>) };
}

/**
 * Makes `file` set every local-only setting: written whole when missing; otherwise the
 * settings it lacks are appended and the ones it has (the developer's own values) kept.
 * Returns the names it added.
 */
export function ensureDevVars(file: string): LocalDevVar[] {
  const existing = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
  const have = namesIn(existing ?? '');
  const missing = (Object.keys(LOCAL_DEV_VARS) as LocalDevVar[]).filter((name) => !have.has(name));
  if (missing.length === 0) return [];
  const head = existing === undefined ? HEADER.join('\n') + '\n' : existing.endsWith('\n') || existing === '' ? existing : existing + '\n';
  writeFileSync(file, head + devVarsText(missing), { mode: 0o600 });
  return missing;
}

if (import.meta.main) {
  const file = path.join(path.dirname(path.dirname(import.meta.dirname)), '.dev.vars');
  const added = ensureDevVars(file);
  if (added.length) process.stderr.write(`dev-vars: ${path.relative(process.cwd(), file) || file}: added ${added.join(', ')}\n`);
}
