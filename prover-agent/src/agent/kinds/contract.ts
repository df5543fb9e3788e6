// What the agent's module of each job kind says about its kind (./commit.ts,
// ./proof.ts, ./verify.ts, ./execute.ts; the service's side: src/jobs/kinds/): the
// engine operation a claim asks for, given its input files, and the report of what
// the engine produced. The job runner (../job-runner.ts) asks the registry
// (./index.ts) and never switches on a kind.
import type { ClaimedJob, CompleteRequest, EngineMetrics, JobKind, ResultName } from '../../protocol.ts';
import type { EngineOp } from '../engine-process.ts';

/** What a kind's report may use of the run that produced it. */
export interface ReportContext {
  /** The job's work directory. */
  dir: string;
  /** Metrics the engine announced while it ran (its progress), merged. */
  progress: EngineMetrics;
  /** Appends a line to the job's logs. */
  log(line: string): void;
  /** Sends a result file (inline with the report when small, uploaded first otherwise); what the report carries of it. */
  sendResult(name: ResultName, path: string): Promise<CompleteRequest['results']>;
}

export interface JobKindHandler<K extends JobKind = JobKind, Op extends EngineOp = EngineOp> {
  kind: K;
  /** What callers call the job's subject: logs name the id the caller holds, not the internal job id. */
  subjectNoun: string;
  /** The engine operation the job asks for; `files` maps its input names (ClaimedJob.artifacts) to paths in `dir`. */
  operation(job: ClaimedJob, files: Record<string, string>, dir: string): Op;
  /** The report (POST /lease/complete) of the engine's result of `op`. */
  report(op: Op, result: unknown, ctx: ReportContext): Promise<Extract<CompleteRequest, { kind: K }>>;
}

/** The metrics the protocol carries, as whole non-negative numbers (an engine may report anything). */
export function pickMetrics(m: EngineMetrics): EngineMetrics {
  const out: EngineMetrics = {};
  for (const k of ['num_instructions', 'cells_used', 'num_segments', 'total_cycle', 'total_tick'] as const) {
    const v = m[k];
    if (typeof v === 'number' && Number.isFinite(v) && v >= 0) out[k] = Math.round(v);
  }
  return out;
}

/** A report's `results`, when it has any. */
export const withResults = (results: CompleteRequest['results']) => (results ? { results } : {});
