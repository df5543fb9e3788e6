// `prover-agent run`: the daemon.
import { Agent } from '../agent/agent.ts';
import { ConfigError, loadConfig, usage } from '../agent/config.ts';
import { createLogger } from '../agent/log.ts';
import { Metrics, serveHealth } from '../agent/metrics.ts';

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
  const log = createLogger(cfg.logLevel);
  const metrics = new Metrics();
  const agent = new Agent(cfg, log, metrics);
  const server = cfg.metricsPort ? await serveHealth(cfg.metricsPort, cfg.metricsHost, metrics, () => agent.health()) : null;
  process.on('SIGTERM', () => agent.shutdown());
  process.on('SIGINT', () => agent.shutdown());
  await agent.run();
  server?.close();
  return 0;
}
