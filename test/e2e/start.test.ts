// The Quickstart's `npm start`, as a new user runs it: a Worker and a dev agent come
// up, the printed key works, a program gets committed and a proof made, and Ctrl-C
// (SIGINT) stops everything with exit code 0. Started again after its dev key and agent
// token were revoked, it revives neither: it says so and makes new ones.
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { caller, freePort, GUESTS, ROOT } from './stack.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** `npm start` as a child, with its output (stdout and stderr together) as it comes. */
function runStart(env: NodeJS.ProcessEnv) {
  const start = spawn(process.execPath, [join(ROOT, 'src/tools/start.ts')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  start.stdout.on('data', (d) => (out += d));
  start.stderr.on('data', (d) => (out += d));
  const exited = once(start, 'exit');
  return {
    out: () => out,
    /** Resolves with the config id once the banner is printed. */
    async banner(): Promise<string> {
      const deadline = Date.now() + 240_000;
      while (!/Config id:\s+(cfg_\S+)/.test(out)) {
        if (start.exitCode !== null || Date.now() > deadline) throw new Error(`npm start did not come up:\n${out}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      return /Config id:\s+(cfg_\S+)/.exec(out)![1];
    },
    /** Ctrl-C; resolves with the exit code. */
    async stop(): Promise<number | null> {
      start.kill('SIGINT');
      const [code] = await exited;
      return code as number | null;
    },
  };
}

/** `npm run admin -- ...args --local --persist-to dir`; resolves with its exit code and output. */
function admin(dir: string, ...args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      [join(ROOT, 'src/tools/admin.ts'), ...args, '--local', '--persist-to', dir],
      { cwd: ROOT },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, out: stdout + stderr }),
    ),
  );
}

describe('npm start', () => {
  // Its wait for the service gives up late: on a loaded 2-core host (npm test runs the
  // static checks and the other projects alongside), applying the migrations and starting
  // wrangler dev once took past 90 s. Then it starts again.
  it(
    'runs the whole service locally with the key and config it prints, and stops cleanly; a dev key or token revoked meanwhile stays revoked at the next start',
    { timeout: 600_000 },
    async () => {
      const persist = await mkdtemp(join(tmpdir(), 'zk-start-'));
      dirs.push(persist);
      const port = await freePort();
      const env = {
        ...process.env,
        PORT: String(port),
        PERSIST_DIR: persist,
        AGENT_METRICS_PORT: String(await freePort()),
        DEV_API_KEY: 'sk_quickstart_test_key_0001',
      };
      const url = `http://127.0.0.1:${port}`;
      const first = runStart(env);
      let program: string;
      try {
        const config = await first.banner();
        const out = first.out();
        expect(out).toContain(url);
        expect(out).toContain('sk_quickstart_test_key_0001');
        const api = caller({ url, apiKey: 'sk_quickstart_test_key_0001' });
        expect(await api.json('GET', '/v1/validate_api_key')).toEqual({ message: 'OK' });
        // The printed console sign-in works.
        const [, email, password] = /Console:\s+\S+\s+\(sign in as (\S+) \/ (\S+)\)/.exec(out)!;
        const signin = await fetch(`${url}/console/v1/auth/signin`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'X-Console-CSRF': '1', origin: url },
          body: JSON.stringify({ email, password }),
        });
        expect(signin.status).toBe(200);
        expect((await signin.json()).user).toMatchObject({ email: 'dev@localhost', is_operator: true });

        const form = new FormData();
        form.append('elf', new Blob([await readFile(join(GUESTS, 'hello.elf'))]), 'hello.elf');
        form.append('vmexe', new Blob(['vmexe']), 'hello.vmexe');
        program = (await api.json('POST', `/v1/programs?config_id=${config}`, form)).id;
        await api.waitFor(`/v1/programs/${program}`, (p: any) => p.status === 'ready');
        const { id: proof } = await api.json('POST', `/v1/proofs?program_id=${program}`, { input: ['0x0168656c6c6f'] });
        expect((await api.waitFor(`/v1/proofs/${proof}`, (p: any) => ['Succeeded', 'Failed'].includes(p.state))).state).toBe('Succeeded');
        // The terminal shows the API's requests and the agent's job lines, not the fleet's own polling.
        await new Promise((r) => setTimeout(r, 3_000)); // an idle agent pulls every second meanwhile
        expect(first.out()).toMatch(/\[worker\] .*POST \/v1\/proofs/);
        expect(first.out()).toMatch(/\[agent\] .*claimed job/);
        expect(first.out()).not.toMatch(/\/internal\/v1\/(queue|agents|jobs|lease)\//);
      } catch (err) {
        // What the Worker and the agent said is the only clue to why a step never finished.
        (err as Error).message += `\n--- npm start's output ---\n${first.out()}`;
        throw err;
      } finally {
        expect(await first.stop()).toBe(0);
      }

      // The dev key and agent token leak, and the operator revokes them while start is down.
      const oldToken = (JSON.parse(await readFile(join(persist, 'dev-credentials.json'), 'utf8')) as { agent_token: string }).agent_token;
      expect(await admin(persist, 'revoke-api-key', '--key', 'sk_quickstart_test_key_0001')).toMatchObject({ code: 0 });
      expect(await admin(persist, 'revoke-agent-token', '--token', oldToken)).toMatchObject({ code: 0 });

      const second = runStart(env);
      let failure: unknown;
      try {
        await second.banner();
        const out = second.out();
        expect(out).toContain('DEV_API_KEY was revoked');
        expect(out).toContain('the dev agent token was revoked');
        const newKey = /API key:\s+(\S+)/.exec(out)![1];
        expect(newKey).not.toBe('sk_quickstart_test_key_0001');
        expect(out).toMatch(/API key:\s+\S+\s+\(header Service-API-Key; new: /);
        const api = caller({ url, apiKey: newKey });
        expect(await api.json('GET', '/v1/validate_api_key')).toEqual({ message: 'OK' });
        expect((await caller({ url, apiKey: 'sk_quickstart_test_key_0001' }).call('GET', '/v1/validate_api_key')).status).toBe(401);
        const saved = JSON.parse(await readFile(join(persist, 'dev-credentials.json'), 'utf8')) as { agent_token: string };
        expect(saved.agent_token).not.toBe(oldToken);
        // The agent runs with the new token: a proof gets made.
        const { id: proof } = await api.json('POST', `/v1/proofs?program_id=${program}`, { input: ['0x0168656c6c6f'] });
        expect((await api.waitFor(`/v1/proofs/${proof}`, (p: any) => ['Succeeded', 'Failed'].includes(p.state))).state).toBe('Succeeded');
      } catch (err) {
        failure = err;
      }
      const code = await second.stop();
      if (failure || code !== 0) {
        const err = failure instanceof Error ? failure : new Error(`the second npm start exited ${code}`);
        err.message += `\n--- the second npm start's output ---\n${second.out()}`;
        throw err;
      }
      // Both stay revoked.
      expect((await admin(persist, 'revoke-agent-token', '--token', oldToken)).code).toBe(1);
    },
  );
});
