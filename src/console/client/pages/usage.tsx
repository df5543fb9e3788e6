// Usage over a date range (the last 30 days at first), with a chart of proofs and cost
// per day drawn by uPlot, which the page loads beside this script (/console/vendor).
import { useEffect, useRef, useState } from 'hono/jsx/dom';
import type uPlot from 'uplot/dist/uPlot';
import { formatUsd, MICRO_USD_PER_USD, microFromUsd, usdFromMicro } from '../../ui/format.ts';
import { may } from '../../ui/states.ts';
import type { Budget, OrgLimits, Usage } from '../../ui/api-types.ts';
import { BudgetView } from '../../ui/views/budget.tsx';
import { LimitsView } from '../../ui/views/limits.tsx';
import { UsageView } from '../../ui/views/usage.tsx';
import { attempt, fail } from '../chrome.ts';
import { field, formOf, formQuery } from '../dom.ts';
import type { OrgApi } from '../endpoints.ts';
import type { SignedInPage } from '../signed-in.ts';

declare global {
  interface Window {
    uPlot?: typeof uPlot;
  }
}

const DAY_MS = 86_400_000;
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

interface Range {
  from: string;
  to: string;
}

const CHART_HEIGHT = 260;
/** The chart fills its box (at least 200 px: a narrow phone's). */
const chartWidth = (box: HTMLElement) => Math.max(200, box.clientWidth || 600);

/** Proofs as bars and cost as a line, per day, into `box`; the chart, to destroy before the next. */
function drawChart(box: HTMLElement, usage: Usage): uPlot | undefined {
  const UPlot = window.uPlot;
  if (!UPlot) {
    fail('The chart library did not load.');
    return undefined;
  }
  const fg = getComputedStyle(document.body).color;
  const data: uPlot.AlignedData = [
    usage.days.map((d) => Date.parse(d.date) / 1000),
    usage.days.map((d) => d.proofs),
    usage.days.map((d) => usdFromMicro(d.cost)),
  ];
  const opts: uPlot.Options = {
    width: chartWidth(box),
    height: CHART_HEIGHT,
    series: [
      {},
      { label: 'Proofs', stroke: '#3b82f6', fill: 'rgba(59,130,246,0.35)', paths: UPlot.paths.bars?.({ size: [0.6, 40] }), scale: 'n' },
      {
        label: 'Cost',
        stroke: '#f59e0b',
        width: 2,
        scale: 'usd',
        value: (_u, v) => (v === null ? '—' : formatUsd(Math.round(v * MICRO_USD_PER_USD))),
      },
    ],
    axes: [
      { stroke: fg },
      { scale: 'n', stroke: fg, label: 'Proofs' },
      // Costs of dev and small proofs are fractions of a cent: formatUsd keeps their digits.
      {
        scale: 'usd',
        side: 1,
        stroke: fg,
        label: 'Cost',
        grid: { show: false },
        size: 70,
        values: (_u, ticks) => ticks.map((v) => formatUsd(Math.round(v * MICRO_USD_PER_USD))),
      },
    ],
    scales: { x: { time: true }, n: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
  };
  return new UPlot(opts, data, box);
}

function UsagePage({ api, initial, range: initialRange }: { api: OrgApi; initial: Usage; range: Range }) {
  const [usage, setUsage] = useState(initial);
  const [range, setRange] = useState(initialRange);
  const chartBox = useRef<HTMLDivElement | null>(null);

  // Drawn to the box's width, and again as it changes (a phone turned, a window resized).
  useEffect(() => {
    const box = chartBox.current;
    const chart = box && drawChart(box, usage);
    if (!box || !chart) return;
    const resized = new ResizeObserver(() => chart.setSize({ width: chartWidth(box), height: CHART_HEIGHT }));
    resized.observe(box);
    return () => {
      resized.disconnect();
      chart.destroy();
    };
  }, [usage]);

  const changeRange = (event: Event) => {
    const form = formOf(event);
    setRange({ from: field(form, 'from'), to: field(form, 'to') });
    const query = formQuery(form);
    void attempt(async () => setUsage(await api.usage(query)));
  };
  return <UsageView usage={usage} from={range.from} to={range.to} chartRef={chartBox} onRange={changeRange} />;
}

/** The monthly budget (README "Budgets"): owners and admins set it here. */
function BudgetPanel({ api, initial, canManage }: { api: OrgApi; initial: Budget; canManage: boolean }) {
  const [budget, setBudget] = useState(initial);
  const save = (event: Event) => {
    event.preventDefault();
    const form = formOf(event);
    const gpuHours = field(form, 'gpu_hours').trim();
    void attempt(
      async () =>
        setBudget(
          await api.setBudget({
            monthly_cost: microFromUsd(field(form, 'usd')),
            monthly_gpu_hours: gpuHours ? Number(gpuHours) : null,
          }),
        ),
      'Budget saved.',
    );
  };
  return <BudgetView budget={budget} canManage={canManage} onSave={save} />;
}

/** The organization's default job limits and quotas (README "Job limits"): owners and admins set the defaults here. */
function LimitsPanel({ api, initial, canManage }: { api: OrgApi; initial: OrgLimits; canManage: boolean }) {
  const [limits, setLimits] = useState(initial);
  const save = (event: Event) => {
    event.preventDefault();
    const form = formOf(event);
    const int = (name: string) => (field(form, name).trim() ? Number(field(form, name)) : null);
    void attempt(
      async () =>
        setLimits(
          await api.setOrgLimits({
            default_cycle_limit: int('cycles'),
            default_cost_limit: microFromUsd(field(form, 'usd')),
            default_deadline_seconds: int('deadline'),
          }),
        ),
      'Limits saved.',
    );
  };
  return <LimitsView limits={limits} canManage={canManage} onSave={save} />;
}

export const usage: SignedInPage = async ({ api, org }) => {
  const now = Date.now();
  const range = { from: isoDay(now - 29 * DAY_MS), to: isoDay(now) };
  const [initial, budget, limits] = await Promise.all([api.usage(new URLSearchParams({ ...range })), api.budget(), api.orgLimits()]);
  return (
    <>
      <BudgetPanel api={api} initial={budget} canManage={may(org.role, 'budgets.manage')} />
      <LimitsPanel api={api} initial={limits} canManage={may(org.role, 'limits.manage')} />
      <UsagePage api={api} initial={initial} range={range} />
    </>
  );
};
