// The agent as a daemon on a host: `--version`; a Node too old for it is refused in one
// line before any TypeScript loads; and agents sharing a host: each --name has its own
// default work dir, a work dir is held by one agent at a time (a second is refused naming
// the first, and a killed agent's dir is free at once), and a metrics port in use is
// refused in one line.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { satisfies } from '../../prover-agent/bin/node-version.js';
import { defaultWorkDir, loadConfig } from '../../prover-agent/src/agent/config.ts';
import { lockWorkDir, WorkDirBusyError } from '../../prover-agent/src/agent/work-dir-lock.ts';
import { addHostCommands } from '../../src/console/ui/add-host.ts';
import { freePort, ROOT } from '../../src/tools/wrangler.ts';

const BIN = path.join(ROOT, 'prover-agent', 'bin', 'prover-agent.js');
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'zk-host-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('prover-agent --version and the Node check', () => {
  it('prints its version', () => {
    const run = spawnSync(process.execPath, [BIN, '--version'], { encoding: 'utf8' });
    const { version } = JSON.parse(readFileSync(path.join(ROOT, 'prover-agent', 'package.json'), 'utf8')) as { version: string };
    expect(run.status).toBe(0);
    expect(run.stdout).toBe(`prover-agent ${version}\n`);
  });

  it('compares versions as numbers', () => {
    expect(satisfies('22.18.0', '22.18.0')).toBe(true);
    expect(satisfies('v22.23.3', '>=22.18.0')).toBe(true);
    expect(satisfies('22.9.0', '22.18.0')).toBe(false);
    expect(satisfies('20.20.2', '22.12.0')).toBe(false);
    expect(satisfies('23.0.0', '22.18.0')).toBe(true);
  });

  it('refuses a Node older than the package asks, in one line, before loading anything else', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'some-tool', type: 'module', engines: { node: '>=99.1.0' } }));
    writeFileSync(
      path.join(dir, 'check.js'),
      `import { requireNode } from ${JSON.stringify(path.join(ROOT, 'prover-agent', 'bin', 'node-version.js'))};\n` +
        `requireNode(new URL('./package.json', import.meta.url), 'install Node 99');\nconsole.log('loaded');\n`,
    );
    const run = spawnSync(process.execPath, [path.join(dir, 'check.js')], { encoding: 'utf8' });
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      `some-tool: needs Node 99.1.0 or later; this is Node ${process.versions.node} (${process.execPath}): install Node 99\n`,
    );
  });
});

describe('agents sharing a host', () => {
  const base = ['--api-url', 'http://svc', '--agent-token', 'at_x'];

  it('gives each name its own default work dir', () => {
    expect(loadConfig(base, {}).workDir).toBe(path.join(homedir(), '.prover-agent', hostname().replace(/[^\w.-]+/g, '_')));
    expect(loadConfig([...base, '--name', 'gpu-1'], {}).workDir).toBe(path.join(homedir(), '.prover-agent', 'gpu-1'));
    expect(loadConfig(base, { PROVER_AGENT_NAME: 'gpu 2/b' }).workDir).toBe(path.join(homedir(), '.prover-agent', 'gpu_2_b'));
    expect(defaultWorkDir('..', '/h')).toBe('/h/.prover-agent/_');
    expect(loadConfig([...base, '--name', 'gpu-1'], { PROVER_WORK_DIR: '/srv/work' }).workDir).toBe('/srv/work');
  });

  it('holds a work dir for one agent at a time', async () => {
    const dir = tempDir();
    const first = await lockWorkDir(path.join(dir, 'work'), 'gpu-a');
    const second = lockWorkDir(path.join(dir, 'work'), 'gpu-b');
    await expect(second).rejects.toThrow(WorkDirBusyError);
    await expect(second).rejects.toThrow(new RegExp(`in use by prover-agent "gpu-a" \\(pid ${process.pid}, running since `));
    // Another path to the same directory is the same lock.
    await expect(lockWorkDir(path.join(dir, 'x', '..', 'work'), 'gpu-c')).rejects.toThrow(WorkDirBusyError);
    await first.release();
    await (await lockWorkDir(path.join(dir, 'work'), 'gpu-b')).release();
  });

  it(
    'refuses a second agent on a work dir or a metrics port in use, and frees a killed agent’s dir at once',
    { timeout: 60_000 },
    async () => {
      const dir = tempDir();
      const metricsPort = await freePort();
      // No service answers here: the agent keeps retrying its first report, holding its work dir.
      const unreachable = `http://127.0.0.1:${await freePort()}`;
      const start = (name: string, workDir: string, port: number) => {
        const child = spawn(
          process.execPath,
          [
            BIN,
            'run',
            '--api-url',
            unreachable,
            '--agent-token',
            'at_x',
            '--name',
            name,
            '--work-dir',
            workDir,
            '--metrics-port',
            String(port),
          ],
          { stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        child.stderr.on('data', (d) => (out += d));
        return {
          child,
          output: () => out,
          exited: once(child, 'exit').then(([code]) => code as number | null),
          async running() {
            while (!out.includes('"artifact cache open"')) {
              if (child.exitCode !== null) throw new Error(`the agent exited:\n${out}`);
              await new Promise((r) => setTimeout(r, 50));
            }
          },
        };
      };
      const workDir = path.join(dir, 'shared');
      const a = start('gpu-a', workDir, metricsPort);
      await a.running();

      const b = start('gpu-b', workDir, 0);
      expect(await b.exited).toBe(2);
      expect(b.output()).toMatch(
        new RegExp(
          `^prover-agent: the work dir ${workDir} is in use by prover-agent "gpu-a" \\(pid ${a.child.pid}, running since [^)]+\\): each agent on a host needs its own --name`,
        ),
      );
      expect(b.output().trim().split('\n')).toHaveLength(1);

      const c = start('gpu-c', path.join(dir, 'own'), metricsPort);
      expect(await c.exited).toBe(2);
      expect(c.output().trim()).toBe(
        `prover-agent: the metrics port 127.0.0.1:${metricsPort} is in use (another agent on this host?): give each agent its own --metrics-port, or 0 for none`,
      );

      a.child.kill('SIGKILL');
      await a.exited;
      const d = start('gpu-d', workDir, 0);
      await d.running();
      d.child.kill('SIGKILL');
      await d.exited;
    },
  );
});

describe('the Fleet page’s commands to add a host', () => {
  it('name the deployment’s own URL, and leave the token to the operator tool', () => {
    const deployed = addHostCommands('https://prover.example.com');
    expect(deployed.commands).toContain('npm run admin -- create-agent-token --name <host> --engines openvm');
    expect(deployed.commands).toContain('--remote --env production');
    expect(deployed.commands).toContain("printf 'PROVER_API_URL=https://prover.example.com\\nPROVER_AGENT_TOKEN=%s");
    expect(deployed.commands).toContain('sudo systemctl enable --now prover-agent@gpu0');
    const local = addHostCommands('http://127.0.0.1:8787');
    expect(local.commands).toContain('--local');
    expect(local.commands).toContain('npm run agent -- --api-url http://127.0.0.1:8787 --agent-token <the token>');
  });
});
