// The Quickstart's `npm start`, as a new user runs it: a Worker and a dev agent come
// up, the printed key works, a program gets committed and a proof made, and Ctrl-C
// (SIGINT) stops everything with exit code 0.
import { spawn } from 'node:child_process';
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

describe('npm start', () => {
  // Its wait for the service gives up late: on a loaded 2-core host (npm test runs the
  // static checks and the other projects alongside), applying the migrations and starting
  // wrangler dev once took past 90 s.
  it('runs the whole service locally with the key and config it prints, and stops cleanly', { timeout: 300_000 }, async () => {
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
    const start = spawn(process.execPath, [join(ROOT, 'src/tools/start.ts')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    start.stdout.on('data', (d) => (out += d));
    start.stderr.on('data', (d) => (out += d));
    const exited = once(start, 'exit');
    try {
      const deadline = Date.now() + 240_000;
      while (!/Config id:\s+(cfg_\S+)/.test(out)) {
        if (start.exitCode !== null || Date.now() > deadline) throw new Error(`npm start did not come up:\n${out}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      const config = /Config id:\s+(cfg_\S+)/.exec(out)![1];
      expect(out).toContain(`http://127.0.0.1:${port}`);
      expect(out).toContain('sk_quickstart_test_key_0001');
      const api = caller({ url: `http://127.0.0.1:${port}`, apiKey: 'sk_quickstart_test_key_0001' });
      expect(await api.json('GET', '/v1/validate_api_key')).toEqual({ message: 'OK' });
      // The printed console sign-in works.
      const [, email, password] = /Console:\s+\S+\s+\(sign in as (\S+) \/ (\S+)\)/.exec(out)!;
      const signin = await fetch(`http://127.0.0.1:${port}/console/v1/auth/signin`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'X-Console-CSRF': '1', origin: `http://127.0.0.1:${port}` },
        body: JSON.stringify({ email, password }),
      });
      expect(signin.status).toBe(200);
      expect((await signin.json()).user).toMatchObject({ email: 'dev@localhost', is_operator: true });

      const form = new FormData();
      form.append('elf', new Blob([await readFile(join(GUESTS, 'hello.elf'))]), 'hello.elf');
      form.append('vmexe', new Blob(['vmexe']), 'hello.vmexe');
      const { id: program } = await api.json('POST', `/v1/programs?config_id=${config}`, form);
      await api.waitFor(`/v1/programs/${program}`, (p: any) => p.status === 'ready');
      const { id: proof } = await api.json('POST', `/v1/proofs?program_id=${program}`, { input: ['0x0168656c6c6f'] });
      expect((await api.waitFor(`/v1/proofs/${proof}`, (p: any) => ['Succeeded', 'Failed'].includes(p.state))).state).toBe('Succeeded');
      // The terminal shows the API's requests and the agent's job lines, not the fleet's own polling.
      await new Promise((r) => setTimeout(r, 3_000)); // an idle agent pulls every second meanwhile
      expect(out).toMatch(/\[worker\] .*POST \/v1\/proofs/);
      expect(out).toMatch(/\[agent\] .*claimed job/);
      expect(out).not.toMatch(/\/internal\/v1\/(queue|agents|jobs|lease)\//);
    } catch (err) {
      // What the Worker and the agent said is the only clue to why a step never finished.
      (err as Error).message += `\n--- npm start's output ---\n${out}`;
      throw err;
    } finally {
      start.kill('SIGINT');
      const [code] = await exited;
      expect(code).toBe(0);
    }
  });
});
