// The agent's own health and Prometheus metrics, served on a local port:
//   GET /healthz  → 200 while the agent is running or draining, 503 otherwise
//   GET /metrics  → Prometheus text format
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();
  private readonly jobs = new Counter({
    name: 'prover_agent_jobs_total',
    help: 'Jobs finished, by kind and outcome',
    labelNames: ['kind', 'outcome'],
    registers: [this.registry],
  });
  private readonly running = new Gauge({
    name: 'prover_agent_jobs_running',
    help: 'Jobs running now, by kind',
    labelNames: ['kind'],
    registers: [this.registry],
  });
  private readonly jobSeconds = new Histogram({
    name: 'prover_agent_job_duration_seconds',
    help: 'Wall time of a job on this agent, claim to report',
    labelNames: ['kind'],
    buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 14400],
    registers: [this.registry],
  });
  private readonly claimSeconds = new Histogram({
    name: 'prover_agent_claim_latency_seconds',
    help: 'Time of a claim request, by whether it got a job',
    labelNames: ['result'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  private readonly engineSeconds = new Histogram({
    name: 'prover_agent_engine_duration_seconds',
    help: 'Wall time of engine operations',
    labelNames: ['engine', 'op'],
    buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 14400],
    registers: [this.registry],
  });
  private readonly heartbeatFailures = new Counter({
    name: 'prover_agent_heartbeat_failures_total',
    help: 'Heartbeats that did not reach the service',
    registers: [this.registry],
  });
  private readonly artifacts = new Counter({
    name: 'prover_agent_artifacts_total',
    help: 'Job input files, by how they were had: hit (the artifact cache), miss (downloaded and kept), off (downloaded: not shared, or the cache is off), inline (came with the claim)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  private readonly apiRetries = new Counter({
    name: 'prover_agent_http_retries_total',
    help: 'Retried HTTP requests to the service or the queue',
    labelNames: ['target'],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'prover_agent_' });
  }

  jobStarted(kind: string) {
    this.running.inc({ kind });
  }
  jobFinished(kind: string, outcome: string, seconds: number) {
    this.running.dec({ kind });
    this.jobs.inc({ kind, outcome });
    this.jobSeconds.observe({ kind }, seconds);
  }
  claimed(gotJob: boolean, seconds: number) {
    this.claimSeconds.observe({ result: gotJob ? 'job' : 'none' }, seconds);
  }
  engineDuration(engine: string, op: string, seconds: number) {
    this.engineSeconds.observe({ engine, op }, seconds);
  }
  heartbeatFailed() {
    this.heartbeatFailures.inc();
  }
  artifactFetched(outcome: 'hit' | 'miss' | 'off' | 'inline') {
    this.artifacts.inc({ outcome });
  }
  retried(target: 'service' | 'queue') {
    this.apiRetries.inc({ target });
  }
}

export function serveHealth(
  port: number,
  host: string,
  metrics: Metrics,
  health: () => { ok: boolean; [k: string]: unknown },
): Promise<Server> {
  const answer = async (req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/healthz') {
      const h = health();
      res.writeHead(h.ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(h));
    } else if (req.url === '/metrics') {
      res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(await metrics.registry.metrics());
    } else {
      res.writeHead(404).end();
    }
  };
  // A scrape that fails answers 500; it must never become an unhandled rejection that
  // takes the agent (and the jobs it runs) down with it.
  const server = createServer((req, res) => {
    answer(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
