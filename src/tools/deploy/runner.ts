// Every wrangler command `npm run deploy` runs goes through one Runner: the live one runs
// it; --plan's prints it and answers as a Cloudflare account that has none of the
// environment's resources yet would (so the plan shows every step a first deploy takes);
// the tests' records it and answers from a script. Nothing else in the deploy talks to
// Cloudflare.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { childEnv, ROOT, type WranglerRun } from '../wrangler.ts';

export interface WranglerCall {
  /** wrangler's arguments. */
  args: string[];
  /** Why the deploy runs it, for the plan and the progress lines. */
  why: string;
  /** Whether it changes anything (a resource, a secret, the deployed Worker), or only reads. */
  changes: boolean;
}

export interface Runner {
  run(call: WranglerCall): Promise<WranglerRun>;
  /** A line of the deploy's own narration (a decision, a step skipped). */
  say(text: string): void;
}

const WRANGLER_CLI = path.join(ROOT, 'node_modules', 'wrangler', 'wrangler-dist', 'cli.js');

/** The command as an operator would type it. */
export function commandLine(args: string[]): string {
  return ['npx wrangler', ...args.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", `'\\''`)}'`))].join(' ');
}

/**
 * Runs wrangler for real, non-interactively (no prompt can stall a deploy), without
 * colours. What a change prints is shown as it comes, indented; a read is shown only
 * when it fails.
 */
export function liveRunner(out: (text: string) => void = (t) => process.stderr.write(t + '\n')): Runner {
  return {
    say: out,
    run(call) {
      out(`${call.changes ? '→' : '·'} ${commandLine(call.args)}`);
      return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, ['--no-warnings', WRANGLER_CLI, ...call.args], {
          cwd: ROOT,
          env: childEnv({ FORCE_COLOR: '0', NO_COLOR: '1', WRANGLER_HIDE_BANNER: 'true' }),
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        const lines = (stream: NodeJS.ReadableStream, keep: (line: string) => void) =>
          createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
            keep(line + '\n');
            if (call.changes) out(`    ${line}`);
          });
        lines(child.stdout, (l) => (stdout += l));
        lines(child.stderr, (l) => (stderr += l));
        child.on('error', reject);
        child.on('close', (code, signal) => {
          const run = { code: code ?? (signal ? 128 : 1), stdout, stderr };
          if (run.code !== 0 && !call.changes) out((stdout + stderr).replace(/^/gm, '    ').trimEnd());
          resolve(run);
        });
      });
    },
  };
}

/**
 * What --plan uses: prints each call, numbered, with why, and answers as an account with
 * nothing of this environment yet: not logged in is not assumed (whoami names one
 * account), every lookup finds nothing, every change succeeds. Values only Cloudflare
 * could give (ids, the URL) are shown as <placeholders>.
 */
export function planRunner(out: (text: string) => void = (t) => process.stdout.write(t + '\n')): Runner {
  let n = 0;
  const created = new Set<string>();
  return {
    say: (text) => out(`      ${text}`),
    async run(call) {
      n += 1;
      out(`${String(n).padStart(3)}. ${call.changes ? 'change' : 'read'}  ${commandLine(call.args)}\n      ${call.why}`);
      const answer = planAnswer(call.args, created);
      if (call.args[0] === 'queues' && call.args[1] === 'create') created.add(call.args[2]);
      return answer;
    },
  };
}

const ok = (stdout = ''): WranglerRun => ({ code: 0, stdout, stderr: '' });
const failed = (stderr: string): WranglerRun => ({ code: 1, stdout: '', stderr });

/** How an account with none of the environment's resources answers (what --plan assumes); `created`: queues made meanwhile. */
export function planAnswer(args: string[], created: ReadonlySet<string> = new Set()): WranglerRun {
  const [cmd, sub, name] = args;
  if (cmd === 'whoami') return ok(JSON.stringify({ loggedIn: true, accounts: [{ id: '<account id>', name: '<your account>' }] }));
  if (cmd === 'secret' && sub === 'list') return failed('Worker not found.');
  if (cmd === 'd1' && sub === 'list') return ok('[]');
  if (cmd === 'queues' && sub === 'info')
    return created.has(name)
      ? ok(`Queue Name: ${name}\nQueue ID: <${name} id>\nNumber of Producers: 0\nNumber of Consumers: 0\n`)
      : failed(`Queue "${name}" does not exist.`);
  if (cmd === 'deploy' && !args.includes('--dry-run')) return ok('Deployed triggers\n  https://<worker>.<your-subdomain>.workers.dev\n');
  return ok();
}
