// The organization's limits on the Usage page (README "Job limits", "Quotas and fair
// share"): its jobs' default limits, with the form that sets them (owners and admins),
// and its quotas against what it uses now (the operator sets those).
import type { OrgLimits } from '../api-types.ts';
import { formatUsd } from '../format.ts';
import { type Fact, Facts } from '../widgets.tsx';

const none = (v: number | null, show: (v: number) => string = String) => (v === null ? 'none' : show(v));

const facts = (l: OrgLimits): Fact[] => [
  ['Default cycle limit', none(l.default_cycle_limit)],
  ['Default cost limit (USD)', none(l.default_cost_limit, formatUsd)],
  ['Default deadline', none(l.default_deadline_seconds, (s) => `${s} s`)],
  ['Queued or running jobs', `${l.active_jobs} of ${l.max_active_jobs} (running: ${l.running_jobs})`],
  ['GPUs held', `${l.held_gpus} of ${l.max_gpus} (running: ${l.running_gpus})`],
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
          Default cycle limit
          <input name="cycles" type="number" min="1" step="1" value={limits?.default_cycle_limit?.toString() ?? ''} placeholder="none" />
        </label>
        <label>
          Default cost limit (USD)
          <input
            name="usd"
            type="number"
            min="0.000001"
            step="0.000001"
            value={limits?.default_cost_limit == null ? '' : String(limits.default_cost_limit / 1e6)}
            placeholder="none"
          />
        </label>
        <label>
          Default deadline (seconds)
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
      <p>Owners and admins set the default limits; a proof or execution that names its own keeps it.</p>
    )}
    <p>Quotas are the operator’s. At a quota new jobs are refused, and queued ones wait while the running ones hold it.</p>
  </section>
);
