// The organization's limits on the Usage page (docs/callers.md "Job limits", "Quotas and fair
// share"): its jobs' limits (each the default and the ceiling of a request's own), with
// the form that sets them (owners and admins), and its quotas against what it uses now
// (the operator sets those).
import type { OrgLimits } from '../api-types.ts';
import { formatCount, formatSeconds, formatUsd, usdFromMicro } from '../format.ts';
import { type Fact, Facts } from '../widgets.tsx';

const none = (v: number | null, show: (v: number) => string) => (v === null ? 'none' : show(v));

const facts = (l: OrgLimits): Fact[] => [
  ['Cycle limit', none(l.default_cycle_limit, formatCount)],
  ['Cost limit', none(l.default_cost_limit, formatUsd)],
  ['Deadline', none(l.default_deadline_seconds, formatSeconds)],
  [
    'Queued or running jobs',
    `${formatCount(l.active_jobs)} of ${formatCount(l.max_active_jobs)} (running: ${formatCount(l.running_jobs)})`,
  ],
  ['GPUs held', `${formatCount(l.held_gpus)} of ${formatCount(l.max_gpus)} (running: ${formatCount(l.running_gpus)})`],
];

export interface LimitsViewProps {
  limits?: OrgLimits;
  canManage?: boolean;
  onSave?: (event: Event) => void;
}

export const LimitsView = ({ limits, canManage, onSave }: LimitsViewProps) => (
  <section id="org-limits" aria-label="Job limits and quotas">
    <h2>Job limits and quotas</h2>
    <Facts id="org-limits-facts" facts={limits && facts(limits)} />
    {canManage ? (
      <form id="org-limits-form" class="filters" onSubmit={onSave}>
        <label>
          Cycle limit
          <input name="cycles" type="number" min="1" step="1" value={limits?.default_cycle_limit?.toString() ?? ''} placeholder="none" />
        </label>
        <label>
          Cost limit (USD)
          <input
            name="usd"
            type="number"
            min="0.000001"
            step="0.000001"
            value={limits?.default_cost_limit == null ? '' : String(usdFromMicro(limits.default_cost_limit))}
            placeholder="none"
          />
        </label>
        <label>
          Deadline (seconds)
          <input
            name="deadline"
            type="number"
            min="1"
            max="2592000"
            step="1"
            value={limits?.default_deadline_seconds?.toString() ?? ''}
            placeholder="none"
          />
        </label>
        <button type="submit">Save limits</button>
      </form>
    ) : (
      <p>Owners and admins set the limits.</p>
    )}
    <p>
      Each limit is the default of every proof and execution and its ceiling: a request may name less, never more. A job’s cost limit is the
      most it is charged, and is reserved against the monthly budget until it ends.
    </p>
    <p>Quotas are the operator’s. At a quota new jobs are refused, and queued ones wait while the running ones hold it.</p>
  </section>
);
