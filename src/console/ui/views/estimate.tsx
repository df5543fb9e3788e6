// The program page's estimate (README "Estimates"): proving its latest succeeded
// execution, from what the fleet measured for its config, or why there is none.
import type { ProgramEstimate } from '../api-types.ts';
import { formatCount, formatUsd, NONE } from '../format.ts';
import { type Fact, Facts } from '../widgets.tsx';

const facts = ({ execution_id, cycles, estimate: e }: ProgramEstimate): Fact[] => [
  ['From the execution', execution_id ?? NONE],
  ['Cycles', formatCount(cycles)],
  ['Proof', `${e.proof_type} on ${e.gpus_used} GPU(s)${e.machine_type ? `, ${e.machine_type}` : ''}`],
  ['Estimated proving time', e.proving_seconds === null ? NONE : `${e.proving_seconds} s`],
  ['Estimated cost (USD)', formatUsd(e.cost)],
  ['Measured proofs it rests on', formatCount(e.based_on_jobs)],
];

export const EstimateView = ({ estimate }: { estimate?: ProgramEstimate }) => (
  <section id="estimate" aria-label="Proving estimate">
    <h2>Proving estimate</h2>
    <Facts id="estimate-facts" facts={estimate && facts(estimate)} />
    <p id="estimate-reason">{estimate?.estimate.reason ?? ''}</p>
  </section>
);
