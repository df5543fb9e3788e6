// The organization's limits on the Usage page (README "Job limits", "Quotas and fair
// share"): its jobs' default limits, with the form that sets them (owners and admins),
// and its quotas against what it uses now (the operator sets those).
import type { OrgLimits } from '../api-types.ts';
import { formatCount, formatSeconds, formatUsd, usdFromMicro } from '../format.ts';
import { type Fact, Facts } from '../widgets.tsx';

const none = (v: number | null, show: (v: number) => string) => (v === null ? 'none' : show(v));

const facts = (l: OrgLimits): Fact[] => [
  ['Default cycle limit', none(l.default_cycle_limit, formatCount)],
  ['Default cost limit', none(l.default_cost_limit, formatUsd)],
  ['Default deadline', none(l.default_deadline_seconds, formatSeconds)],
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
            value={limits?.default_cost_limit == null ? '' : String(usdFromMicro(limits.default_cost_limit))}
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
