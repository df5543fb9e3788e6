// The packaged agent, as a GPU host gets it: `npm run build:agent`'s tarball installed with
// npm into an empty directory (offline: it has no dependencies to fetch), then run from
// there, away from this repository (its own working directory, a PATH with only Node and
// the system), against a real Worker under wrangler dev: it registers, takes a program's
// commit job and a proof job with the dev engine (its engine child process is the
// bundle's own), reports both, serves its metrics, and stops on SIGTERM.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAgentPackage } from '../../src/tools/build-agent.ts';
import { caller, freePort, registerGuest, ROOT, startStack, type Stack } from './stack.ts';

let stack: Stack;
let prefix: string;
beforeAll(async () => {
  stack = await startStack();
  prefix = mkdtempSync(path.join(tmpdir(), 'zk-agent-install-'));
});
afterAll(async () => {
  await stack?.stop();
  if (prefix) rmSync(prefix, { recursive: true, force: true });
});

describe('the packaged prover-agent', () => {
  it('installs without this repository and runs a real job against the Worker', { timeout: 240_000 }, async () => {
    const tarball = await buildAgentPackage();
    execFileSync('npm', ['install', '--global', '--prefix', prefix, tarball, '--offline', '--no-audit', '--no-fund'], {
      cwd: prefix,
      stdio: 'pipe',
    });
    const installed = path.join(prefix, 'lib', 'node_modules', 'prover-agent');
    // Everything it runs is in the package: no dependency installed beside it, no path into this repository.
    expect(readdirSync(installed).sort()).toEqual(['README.md', 'bin', 'dist', 'package.json', 'packaging']);
    expect(realpathSync(installed).startsWith(realpathSync(prefix))).toBe(true);
    for (const file of ['cli.js', 'engine-child.js']) expect(readFileSync(path.join(installed, 'dist', file), 'utf8')).not.toContain(ROOT);

    const bin = path.join(prefix, 'bin', 'prover-agent');
    // Node and the system's tools only: what a host's PATH has.
    const env = { PATH: [path.dirname(process.execPath), '/usr/bin', '/bin'].join(path.delimiter), HOME: prefix };
    const version = execFileSync(bin, ['--version'], { cwd: prefix, env, encoding: 'utf8' });
    expect(version).toMatch(/^prover-agent \d+\.\d+\.\d+ \([0-9a-f]{12}(\+changes)?\)\n$/);

    const metricsPort = await freePort();
    const agent = spawn(
      bin,
      ['run', '--api-url', stack.url, '--agent-token', stack.agentToken, '--name', 'packaged', '--engines', 'dev', '--gpus', '0'],
      {
        cwd: prefix,
        env: { ...env, PROVER_MACHINE_TYPE: 'e2e', PROVER_METRICS_PORT: String(metricsPort), PROVER_POLL_INTERVAL: '0.05' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let logs = '';
    agent.stdout.on('data', (d) => (logs += d));
    agent.stderr.on('data', (d) => (logs += d));
    const exited = once(agent, 'exit');
    try {
      const deadline = Date.now() + 60_000;
      while (!logs.includes('"agent running"')) {
        if (agent.exitCode !== null || Date.now() > deadline) throw new Error(`the packaged agent did not come up:\n${logs}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      // Its default work dir is its own: ~/.prover-agent/<name>.
      expect(existsSync(path.join(prefix, '.prover-agent', 'packaged'))).toBe(true);

      const api = caller(stack);
      const program = await registerGuest(api, stack.devConfig, 'hello.elf');
      expect((await api.json('GET', `/v1/programs/${program}`)).status).toBe('ready');
      const { id: proof } = await api.json('POST', `/v1/proofs?program_id=${program}`, { input: ['0x0168656c6c6f'] });
      const done = await api.waitFor(`/v1/proofs/${proof}`, (p: any) => ['Succeeded', 'Failed'].includes(p.state));
      expect(done.state).toBe('Succeeded');
      // The packaged agent did the work: no other agent runs on this stack.
      expect(logs).toMatch(/"claimed job"/);
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      expect(metrics).toMatch(/prover_agent_jobs_total\{kind="proof",outcome="completed"\} 1/);
      expect(metrics).toMatch(/prover_agent_jobs_total\{kind="commit",outcome="completed"\} 1/);
    } catch (err) {
      (err as Error).message += `\n--- the packaged agent's output ---\n${logs}`;
      throw err;
    } finally {
      agent.kill('SIGTERM');
      const [code] = await exited;
      expect(code).toBe(0);
    }
  });
});
