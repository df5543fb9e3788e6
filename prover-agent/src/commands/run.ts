// `prover-agent run`: the daemon.
import { Agent, AgentRefused } from '../agent/agent.ts';
import { ConfigError, loadConfig, usage } from '../agent/config.ts';
import { createLogger } from '../agent/log.ts';
import { Metrics, serveHealth } from '../agent/metrics.ts';
import { lockWorkDir, WorkDirBusyError } from '../agent/work-dir-lock.ts';

export async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(usage());
    return 0;
  }
  let cfg;
  try {
    cfg = loadConfig(argv);
  } catch (err) {
    if (err instanceof ConfigError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`prover-agent: ${(err as Error).message}\n\n${usage()}`);
      return 2;
    }
    throw err;
  }
  // What another agent on this host holds is refused with one line (exit 2: a unit that
  // restarts on failure should not retry a configuration that cannot work).
  let lock;
  try {
    lock = await lockWorkDir(cfg.workDir, cfg.name);
  } catch (err) {
    if (!(err instanceof WorkDirBusyError)) throw err;
    console.error(`prover-agent: ${err.message}`);
    return 2;
  }
  const log = createLogger(cfg.logLevel);
  const metrics = new Metrics();
  const agent = new Agent(cfg, log, metrics);
  let server = null;
  try {
    server = cfg.metricsPort ? await serveHealth(cfg.metricsPort, cfg.metricsHost, metrics, () => agent.health()) : null;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    console.error(
      `prover-agent: the metrics port ${cfg.metricsHost}:${cfg.metricsPort} is in use (another agent on this host?): give each agent its own --metrics-port, or 0 for none`,
    );
    await lock.release();
    return 2;
  }
  process.on('SIGTERM', () => agent.shutdown());
  process.on('SIGINT', () => agent.shutdown());
  // Refused for good (a revoked or unknown token, another machine type): one line and exit
  // 2, which the systemd unit does not restart (RestartPreventExitStatus=2).
  let code = 0;
  try {
    await agent.run();
  } catch (err) {
    if (!(err instanceof AgentRefused)) throw err;
    console.error(`prover-agent: ${err.message}`);
    code = 2;
  }
  server?.close();
  await lock.release();
  return code;
}
