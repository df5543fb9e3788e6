// The organization's monthly budget on the Usage page (README "Budgets"): its limits,
// this month's usage against them, the threshold notices, and (owners and admins) the
// form that sets them.
import type { Budget } from '../api-types.ts';
import { formatAmount, formatDate, formatUsd, percentOf, usdFromMicro } from '../format.ts';
import { type Fact, Facts } from '../widgets.tsx';

const facts = (b: Budget): Fact[] => [
  ['Month (UTC)', b.month],
  ['Spending budget', b.monthly_cost === null ? 'none' : formatUsd(b.monthly_cost)],
  ['Spent', formatUsd(b.used_cost) + percentOf(b.used_cost, b.monthly_cost)],
  ['GPU-hour budget', b.monthly_gpu_hours === null ? 'none' : formatAmount(b.monthly_gpu_hours)],
  ['GPU-hours used', formatAmount(b.used_gpu_hours) + percentOf(b.used_gpu_hours, b.monthly_gpu_hours)],
];

const noticeText = (n: Budget['notices'][number]) =>
  `${n.threshold} % of the ${n.metric === 'cost' ? 'spending' : 'GPU-hour'} budget reached on ${formatDate(n.created_at)}` +
  (n.threshold >= 100 ? ': new proofs and executions are refused until the month ends or the budget is raised.' : '.');

export interface BudgetViewProps {
  budget?: Budget;
  canManage?: boolean;
  onSave?: (event: Event) => void;
}

export const BudgetView = ({ budget, canManage, onSave }: BudgetViewProps) => (
  <section id="budget" aria-label="Monthly budget">
    <h2>Monthly budget</h2>
    {budget?.notices.length ? (
      <ul id="budget-notices" class={budget.submissions_refused ? 'notice error' : 'notice'}>
        {budget.notices.map((n) => (
          <li>{noticeText(n)}</li>
        ))}
      </ul>
    ) : null}
    <Facts id="budget-facts" facts={budget && facts(budget)} />
    {canManage ? (
      <form id="budget-form" class="filters" onSubmit={onSave}>
        <label>
          Spending budget per month (USD)
          <input
            name="usd"
            type="number"
            min="0"
            step="0.01"
            value={budget?.monthly_cost == null ? '' : String(usdFromMicro(budget.monthly_cost))}
            placeholder="none"
          />
        </label>
        <label>
          GPU-hours per month
          <input
            name="gpu_hours"
            type="number"
            min="0"
            step="any"
            value={budget?.monthly_gpu_hours == null ? '' : String(budget.monthly_gpu_hours)}
            placeholder="none"
          />
        </label>
        <button type="submit">Save budget</button>
      </form>
    ) : (
      <p>Owners and admins set the budget. At 100 % new proofs and executions are refused; running ones finish.</p>
    )}
  </section>
);
