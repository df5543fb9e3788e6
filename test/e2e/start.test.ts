// The Quickstart's `npm start`, as a new user runs it: a Worker and a dev agent come
// up, the printed key works, a program gets committed and a proof made, and Ctrl-C
// (SIGINT) stops everything with exit code 0; so does closing its terminal (SIGHUP to its
// process group), leaving no process and no port behind. The terminal before the banner
// stays short, and a second start on a port in use says what holds it. Started again
// after its dev key and agent token were revoked, it revives neither: it says so and
// makes new ones.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { portIsFree } from '../../src/tools/wrangler.ts';
import { caller, freePort, GUESTS, ROOT } from './stack.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** The banner's first line. */
const BANNER = /Proving service: http/;

/**
 * `npm start` in a state directory of its own, its output collected. `detached`: it leads
 * a process group of its own, as a terminal's foreground job does.
 */
async function startService(extraEnv: Record<string, string> = {}, persist?: string) {
  if (!persist) {
    persist = await mkdtemp(join(tmpdir(), 'zk-start-'));
    dirs.push(persist);
  }
  const port = await freePort();
  const metricsPort = await freePort();
  const env = { ...process.env, PORT: String(port), PERSIST_DIR: persist, AGENT_METRICS_PORT: String(metricsPort), ...extraEnv };
  const start = spawn(process.execPath, [join(ROOT, 'src/tools/start.ts')], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  start.stdout.on('data', (d) => (out += d));
  start.stderr.on('data', (d) => (out += d));
  const exited = once(start, 'exit');
  return {
    start,
    port,
    metricsPort,
    persist,
    env,
    output: () => out,
    exited,
    async banner(): Promise<void> {
      const deadline = Date.now() + 240_000;
      while (!/Config id:\s+(cfg_\S+)/.test(out)) {
        if (start.exitCode !== null || Date.now() > deadline) throw new Error(`npm start did not come up:\n${out}`);
        await new Promise((r) => setTimeout(r, 200));
      }
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

/** Processes whose command line names `dir` (start's Worker and agent are given its state directory). */
function processesUsing(dir: string): string[] {
  return execFileSync('ps', ['-eo', 'pid=,stat=,args='], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes(dir) && !/^\s*\d+\s+Z/.test(l));
}

describe('npm start', () => {
  // Its wait for the service gives up late: on a loaded 2-core host (npm test runs the
  // static checks and the other projects alongside), applying the migrations and starting
  // wrangler dev once took past 90 s.
  it('runs the whole service locally with the key and config it prints, and stops cleanly', { timeout: 300_000 }, async () => {
    const svc = await startService({ DEV_API_KEY: 'sk_quickstart_test_key_0001' });
    const { start, port, exited } = svc;
    const out = svc.output;
    try {
      await svc.banner();
      const config = /Config id:\s+(cfg_\S+)/.exec(out())![1];
      // Quiet before the banner: no table of bindings, no warning that the cron is not run.
      const lines = out().split('\n');
      expect(lines.findIndex((l) => BANNER.test(l))).toBeLessThan(40);
      expect(out()).not.toMatch(/env\.[A-Z_]+ /);
      expect(out()).not.toMatch(/Scheduled Workers are not automatically triggered/);
      expect(out()).toMatch(/Cron sweep: +fired every minute by npm start/);
      expect(out()).toContain(`http://127.0.0.1:${port}`);
      expect(out()).toContain('sk_quickstart_test_key_0001');
      const api = caller({ url: `http://127.0.0.1:${port}`, apiKey: 'sk_quickstart_test_key_0001' });
      expect(await api.json('GET', '/v1/validate_api_key')).toEqual({ message: 'OK' });
      // The printed console sign-in works.
      const [, email, password] = /Console:\s+\S+\s+\(sign in as (\S+) \/ (\S+)\)/.exec(out())!;
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
      expect(out()).toMatch(/\[worker\] .*POST \/v1\/proofs/);
      expect(out()).toMatch(/\[agent\] .*claimed job/);
      expect(out()).not.toMatch(/\/internal\/v1\/(queue|agents|jobs|lease)\//);

      // A second start on the same port is refused, naming what holds it: this start's Worker.
      const second = spawn(process.execPath, [join(ROOT, 'src/tools/start.ts')], {
        cwd: ROOT,
        env: { ...svc.env, AGENT_METRICS_PORT: String(await freePort()) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let secondOut = '';
      second.stderr.on('data', (d) => (secondOut += d));
      const [secondCode] = await once(second, 'exit');
      expect(secondCode).toBe(1);
      expect(secondOut).toMatch(
        new RegExp(`the Worker port ${port} is in use by pid \\d+ \\(.*workerd.*led by: .*wrangler.* dev .*--port ${port}`),
      );
      expect(secondOut).toMatch(/stop it with `kill -- -\d+`, or set PORT/);
    } catch (err) {
      // What the Worker and the agent said is the only clue to why a step never finished.
      (err as Error).message += `\n--- npm start's output ---\n${out()}`;
      throw err;
    } finally {
      start.kill('SIGINT');
      const [code] = await exited;
      expect(code).toBe(0);
    }
  });

  it('stops the Worker and the agent when its terminal closes (SIGHUP to its process group)', { timeout: 300_000 }, async () => {
    const svc = await startService();
    try {
      await svc.banner();
      expect(processesUsing(svc.persist).length).toBeGreaterThan(0);
    } catch (err) {
      (err as Error).message += `\n--- npm start's output ---\n${svc.output()}`;
      throw err;
    } finally {
      // What a terminal does when it closes: SIGHUP to its foreground process group.
      process.kill(-svc.start.pid!, 'SIGHUP');
      const [code] = await svc.exited;
      expect(code).toBe(0);
    }
    expect(svc.output()).toMatch(/SIGHUP: stopping the agent, then the Worker/);
    expect(processesUsing(svc.persist)).toEqual([]);
    expect(await portIsFree(svc.port)).toBe(true);
    expect(await portIsFree(svc.metricsPort)).toBe(true);
  });

  it(
    'a dev key or agent token revoked while it is down stays revoked at the next start: it says so and makes new ones',
    { timeout: 600_000 },
    async () => {
      const first = await startService({ DEV_API_KEY: 'sk_quickstart_test_key_0002' });
      try {
        await first.banner();
      } catch (err) {
        (err as Error).message += `\n--- npm start's output ---\n${first.output()}`;
        throw err;
      } finally {
        first.start.kill('SIGINT');
        expect((await first.exited)[0]).toBe(0);
      }
      // The dev key and agent token leak, and the operator revokes them while start is down.
      const { persist } = first;
      const oldToken = (JSON.parse(await readFile(join(persist, 'dev-credentials.json'), 'utf8')) as { agent_token: string }).agent_token;
      expect(await admin(persist, 'revoke-api-key', '--key', 'sk_quickstart_test_key_0002')).toMatchObject({ code: 0 });
      expect(await admin(persist, 'revoke-agent-token', '--token', oldToken)).toMatchObject({ code: 0 });

      const second = await startService({ DEV_API_KEY: 'sk_quickstart_test_key_0002' }, persist);
      const url = `http://127.0.0.1:${second.port}`;
      try {
        await second.banner();
        const out = second.output();
        const config = /Config id:\s+(cfg_\S+)/.exec(out)![1];
        expect(out).toContain('DEV_API_KEY was revoked');
        expect(out).toContain('the dev agent token was revoked');
        const newKey = /API key:\s+(\S+)/.exec(out)![1];
        expect(newKey).not.toBe('sk_quickstart_test_key_0002');
        expect(out).toMatch(/API key:\s+\S+\s+\(header Service-API-Key; new: /);
        const api = caller({ url, apiKey: newKey });
        expect(await api.json('GET', '/v1/validate_api_key')).toEqual({ message: 'OK' });
        expect((await caller({ url, apiKey: 'sk_quickstart_test_key_0002' }).call('GET', '/v1/validate_api_key')).status).toBe(401);
        const saved = JSON.parse(await readFile(join(persist, 'dev-credentials.json'), 'utf8')) as { agent_token: string };
        expect(saved.agent_token).not.toBe(oldToken);
        // The agent runs with the new token: a proof gets made.
        const form = new FormData();
        form.append('elf', new Blob([await readFile(join(GUESTS, 'hello.elf'))]), 'hello.elf');
        form.append('vmexe', new Blob(['vmexe']), 'hello.vmexe');
        const { id: program } = await api.json('POST', `/v1/programs?config_id=${config}`, form);
        await api.waitFor(`/v1/programs/${program}`, (p: any) => p.status === 'ready');
        const { id: proof } = await api.json('POST', `/v1/proofs?program_id=${program}`, { input: ['0x0168656c6c6f'] });
        expect((await api.waitFor(`/v1/proofs/${proof}`, (p: any) => ['Succeeded', 'Failed'].includes(p.state))).state).toBe('Succeeded');
      } catch (err) {
        (err as Error).message += `\n--- the second npm start's output ---\n${second.output()}`;
        throw err;
      } finally {
        second.start.kill('SIGINT');
        expect((await second.exited)[0]).toBe(0);
      }
      // Both stay revoked.
      expect((await admin(persist, 'revoke-agent-token', '--token', oldToken)).code).toBe(1);
    },
  );
});
