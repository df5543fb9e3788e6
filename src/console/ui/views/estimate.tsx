// The program page's estimate (README "Estimates"): proving its latest succeeded
// execution, from what the fleet measured for its config, or why there is none. An
// execution's page shows its own.
import type { ProgramEstimate } from '../api-types.ts';
import { counted, formatCount, formatSeconds, formatUsd, gpusText, NONE } from '../format.ts';
import { type Fact, Facts, EmptyState } from '../widgets.tsx';

const facts = ({ execution_id, cycles, estimate: e }: ProgramEstimate): Fact[] => [
  ['From the execution', execution_id ?? NONE],
  ['Cycles', formatCount(cycles)],
  ['Proof', `${e.proof_type} on ${gpusText(e.gpus_used)}${e.machine_type ? `, machine type ${e.machine_type}` : ''}`],
  ['Estimated proving time', formatSeconds(e.proving_seconds)],
  ['Estimated cost', formatUsd(e.cost)],
  ['Measured proofs it rests on', counted(e.based_on_jobs, 'proof')],
];

export const EstimateView = ({ estimate }: { estimate?: ProgramEstimate }) => (
  <section id="estimate" aria-label="Proving estimate">
    <h2>Proving estimate</h2>
    {estimate && estimate.execution_id === null ? (
      // A program with no succeeded execution has no cycles to estimate from (the API's reason speaks of an execution it does not have).
      <EmptyState id="estimate-empty" title="No estimate yet: the program has no succeeded execution to measure its cycles.">
        <p>Once a run of it succeeds (Executions, above), the estimate of proving that run shows here.</p>
      </EmptyState>
    ) : (
      <>
        <Facts id="estimate-facts" facts={estimate && facts(estimate)} />
        {/* Why there is none; with one, the facts above say what it rests on. */}
        <p id="estimate-reason">{estimate && estimate.estimate.proving_seconds === null ? (estimate.estimate.reason ?? '') : ''}</p>
      </>
    )}
  </section>
);
