// A host for openvm engine tests: a temporary HOME (for ~/.openvm), a configs
// directory prepared with `prover-agent setup-config --run` against the
// stand-in CLI (fake-cargo), and job contexts that record what the engine
// reports.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createOpenvmEngine, type OpenvmEngineOptions } from '../../../prover-agent/src/engine/openvm/index.ts';
import type { EngineContext } from '../../../prover-agent/src/engine/types.ts';
import type { EngineConfig, EngineMetrics, ProvePhase } from '../../../prover-agent/src/protocol.ts';

export const FAKE_CARGO = fileURLToPath(new URL('./fake-cargo', import.meta.url));
const CLI = fileURLToPath(new URL('../../../prover-agent/bin/prover-agent.js', import.meta.url));

export const CONFIG_ID = 'cfg_01JTESTC0NF1G0000000000000';
export const OPENVM_TOML = '[app_vm_config.rv64i]\n[app_vm_config.rv64m]\n[app_vm_config.io]\n';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

export interface Invocation {
  pid: number;
  argv: string[];
  cwd: string;
  cuda_visible_devices: string | null;
}

export interface Host {
  root: string;
  home: string;
  configsDir: string;
  configDir: string;
  /** Environment for the stand-in: this host's HOME, and every invocation logged. */
  env: NodeJS.ProcessEnv;
  invocations(): Promise<Invocation[]>;
  engine(extra?: Partial<OpenvmEngineOptions> & { fakeEnv?: Record<string, string> }): ReturnType<typeof createOpenvmEngine>;
  cleanup(): Promise<void>;
}

export async function makeHost(o: { evm?: boolean; setUp?: boolean } = {}): Promise<Host> {
  const root = await mkdtemp(join(tmpdir(), 'openvm-engine-'));
  const home = join(root, 'home');
  const configsDir = join(root, 'configs');
  const argsLog = join(root, 'invocations.jsonl');
  await mkdir(home);
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('FAKE_OPENVM_')));
  const env: NodeJS.ProcessEnv = { ...inherited, HOME: home, FAKE_OPENVM_ARGS_LOG: argsLog };

  if (o.setUp ?? true) {
    const toml = join(root, 'openvm.toml');
    await writeFile(toml, OPENVM_TOML);
    const args = ['setup-config', CONFIG_ID, '--configs-dir', configsDir, '--openvm-toml', toml, '--cargo', FAKE_CARGO, '--run'];
    // No solc on test hosts: --download, as an operator without solc would.
    const res = await runCli(o.evm ? [...args, '--evm', '--download'] : args, env);
    if (res.code !== 0) throw new Error(`setup-config failed: ${res.stderr}`);
    await rm(argsLog, { force: true });
  }

  return {
    root,
    home,
    configsDir,
    configDir: join(configsDir, CONFIG_ID),
    env,
    async invocations() {
      const text = await readFile(argsLog, 'utf8').catch(() => '');
      return text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Invocation);
    },
    engine(extra = {}) {
      const { fakeEnv, ...options } = extra;
      return createOpenvmEngine({ configsDir, cargoPath: FAKE_CARGO, env: { ...env, ...fakeEnv }, ...options });
    },
    cleanup: () => rm(root, { recursive: true, force: true }),
  };
}

export function config(over: Partial<EngineConfig> = {}): EngineConfig {
  return {
    id: CONFIG_ID,
    engine: 'openvm',
    openvm_version: 'v2.0.0',
    stark_backend_version: 'v2.0.0',
    app_vm_commit: '',
    deferral_enabled: false,
    public_values_bytes: 32,
    ...over,
  };
}

export interface Job {
  ctx: EngineContext;
  workDir: string;
  logs: string[];
  phases: ProvePhase[];
  metrics: EngineMetrics[];
  abort: AbortController;
  /** Resolves with the first logged line matching `re`. */
  logged(re: RegExp): Promise<string>;
  files: { vmexe: string; elf: string; input: string };
}

export async function makeJob(host: Host, o: { config?: Partial<EngineConfig>; gpus?: number[]; input?: unknown } = {}): Promise<Job> {
  const workDir = await mkdtemp(join(host.root, 'job-'));
  const files = { vmexe: join(workDir, 'program.vmexe'), elf: join(workDir, 'program.elf'), input: join(workDir, 'input.json') };
  await writeFile(files.vmexe, 'fake VMEXE bytes of a guest program');
  await writeFile(files.elf, '\x7fELF fake');
  await writeFile(files.input, JSON.stringify(o.input ?? { input: ['0x0105000000', '02aabbccdd'] }));
  const logs: string[] = [];
  const phases: ProvePhase[] = [];
  const metrics: EngineMetrics[] = [];
  const waiters: { re: RegExp; resolve(line: string): void }[] = [];
  const abort = new AbortController();
  const ctx: EngineContext = {
    workDir,
    config: config(o.config),
    signal: abort.signal,
    gpus: o.gpus ?? [],
    log(line) {
      logs.push(line);
      for (const w of waiters.filter((w) => w.re.test(line))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    },
    progress(update) {
      if (update.phase) phases.push(update.phase);
      if (update.metrics) metrics.push(update.metrics);
    },
  };
  return {
    ctx,
    workDir,
    logs,
    phases,
    metrics,
    abort,
    files,
    logged(re) {
      const seen = logs.find((l) => re.test(l));
      return seen !== undefined ? Promise.resolve(seen) : new Promise((resolve) => waiters.push({ re, resolve }));
    },
  };
}

/** Whether a process with this pid still exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A killed process whose parent is gone waits as a zombie until PID 1 reaps it, and
  // containers' PID 1 often never does: a zombie has stopped running, so it is not alive.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return true;
  }
}
