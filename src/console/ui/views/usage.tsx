// Usage: totals, a chart per day, and tables per day and per project.
import type { RefObject } from 'hono/jsx';
import type { Usage, UsageTotals } from '../api-types.ts';
import { formatAmount, formatCount, formatUsd } from '../format.ts';
import { links } from '../site.ts';
import { type Column, DataTable } from '../table.tsx';
import { DateRange, EmptyState, type Fact, Facts } from '../widgets.tsx';

const totalsColumns = <T extends UsageTotals>(first: string, label: (row: T) => string): Column<T>[] => [
  { header: first, cell: label },
  { header: 'Proofs', cell: (t) => formatCount(t.proofs), numeric: true },
  { header: 'Instructions', cell: (t) => formatCount(t.instructions), numeric: true },
  { header: 'GPU-hours', cell: (t) => formatAmount(t.gpu_hours), numeric: true },
  { header: 'Cost', cell: (t) => formatUsd(t.cost), numeric: true },
];
const dayColumns = totalsColumns<Usage['days'][number]>('Day', (d) => d.date);
const projectColumns = totalsColumns<Usage['projects'][number]>('Project', (p) => p.project_name);

const totalFacts = (t: UsageTotals): Fact[] => [
  ['Proofs', formatCount(t.proofs)],
  ['Instructions', formatCount(t.instructions)],
  ['GPU-hours', formatAmount(t.gpu_hours)],
  ['Cost', formatUsd(t.cost)],
];

export interface UsageViewProps {
  usage?: Usage;
  /** The date range asked for (YYYY-MM-DD). */
  from?: string;
  to?: string;
  /** The chart's box, which the client draws into (uPlot). */
  chartRef?: RefObject<unknown>;
  onRange?: (event: Event) => void;
}

export const UsageView = ({ usage, from, to, chartRef, onRange }: UsageViewProps) => (
  <>
    <form id="filters" class="filters" onChange={onRange} onSubmit={(event: Event) => event.preventDefault()}>
      <DateRange from={from} to={to} />
    </form>
    <Facts id="usage-totals" facts={usage && totalFacts(usage.totals)} />
    <figure class="chart">
      <div id="usage-chart" role="img" aria-label="Proofs and cost per day" ref={chartRef}></div>
      <figcaption>Proofs (bars) and cost in USD (line) per day, UTC</figcaption>
    </figure>
    <h2>Per day</h2>
    <DataTable
      id="usage-days"
      caption="Usage per day"
      columns={dayColumns}
      rows={usage?.days.filter((d) => d.proofs > 0)}
      empty={
        <EmptyState id="usage-days-empty" title="No proofs in this range.">
          <p>
            {'Usage counts proofs by the day they were made. Pick another range above, or see '}
            <a href={links.proofs}>Proofs</a>
            {' for how to make one.'}
          </p>
        </EmptyState>
      }
    />
    <h2>Per project</h2>
    <DataTable
      id="usage-projects"
      caption="Usage per project"
      columns={projectColumns}
      rows={usage?.projects}
      empty="No proofs in this range."
    />
  </>
);
