// The fleet (service operators): agents seen in the last day and the queue.
import type { Fleet } from '../api-types.ts';
import { formatCount, formatDate, formatSeconds, gpusText } from '../format.ts';
import { type Column, DataTable } from '../table.tsx';
import { EmptyState, type Fact, Facts } from '../widgets.tsx';
import { addHostCommands } from '../add-host.ts';

type Agent = Fleet['agents'][number];
type QueueLane = Fleet['queued'][number];
type AgentToken = Fleet['tokens'][number];

const agentColumns: Column<Agent>[] = [
  { header: 'Name', cell: (a) => a.name + (a.stale ? ' (stale)' : '') },
  { header: 'Machine type', cell: (a) => a.machine_type },
  // An agent with no GPU serves GPU-less engines (dev) on its CPU.
  { header: 'Runs on', cell: (a) => gpusText(a.gpus) },
  { header: 'Engines', cell: (a) => a.engines.join(', ') },
  { header: 'Configs', cell: (a) => a.configs.join(', ') || 'any' },
  { header: 'Last seen', cell: (a) => formatDate(a.last_seen_at) },
];

const queueColumns: Column<QueueLane>[] = [
  { header: 'Engine', cell: (q) => q.engine },
  { header: 'Config', cell: (q) => <code>{q.config_id}</code> },
  { header: 'Jobs', cell: (q) => formatCount(q.jobs), numeric: true },
  { header: 'Oldest queued', cell: (q) => formatDate(q.oldest_queued_at) },
  { header: 'Age', cell: (q) => formatSeconds(q.oldest_age_seconds), numeric: true },
];

const tokenColumns: Column<AgentToken>[] = [
  { header: 'Name', cell: (t) => t.name },
  { header: 'Engines', cell: (t) => t.engines.join(', ') || 'none' },
  { header: 'Configs', cell: (t) => (t.configs ? t.configs.map((id) => <code key={id}>{id} </code>) : 'every config of its engines') },
  { header: 'Machine type', cell: (t) => t.machine_type },
  { header: 'Most GPUs', cell: (t) => formatCount(t.max_gpus), numeric: true },
  { header: 'Most jobs at once', cell: (t) => formatCount(t.max_leases), numeric: true },
  { header: 'Created', cell: (t) => formatDate(t.created_at) },
];

function fleetFacts(f: Fleet): Fact[] {
  const live = f.agents.filter((a) => !a.stale);
  return [
    ['Agents (not stale)', formatCount(live.length)],
    ['GPUs (not stale)', formatCount(live.reduce((n, a) => n + a.gpus, 0))],
    ['Agents on CPU only (not stale)', formatCount(live.filter((a) => a.gpus === 0).length)],
    ['Jobs running', formatCount(f.running)],
    ['Jobs queued', formatCount(f.queued.reduce((n, q) => n + q.jobs, 0))],
  ];
}

const AddHost = ({ apiUrl }: { apiUrl: string }) => {
  const { where, commands } = addHostCommands(apiUrl);
  return (
    <>
      <h2>Add a host</h2>
      <p>{where}</p>
      <pre id="add-host" class="commands">
        {commands}
      </pre>
    </>
  );
};

export const FleetView = ({ fleet, apiUrl }: { fleet?: Fleet; apiUrl?: string }) => (
  <>
    <Facts id="fleet-facts" facts={fleet && fleetFacts(fleet)} />
    <h2>Agents seen in the last day</h2>
    <DataTable
      id="agents"
      caption="Agents"
      columns={agentColumns}
      rows={fleet?.agents}
      empty={
        <EmptyState id="agents-empty" title="No agent has asked for work in the last day.">
          <p>
            {'Jobs wait until an agent serving their engine runs: start '}
            <code>prover-agent</code>
            {' on a host with an agent token (README “Running agents”; '}
            <code>npm start</code>
            {' runs a local one).'}
          </p>
        </EmptyState>
      }
    />
    <h2>Agent tokens: what they may claim and hold</h2>
    <DataTable id="agent-tokens" caption="Live agent tokens" columns={tokenColumns} rows={fleet?.tokens} empty="No live agent token." />
    <h2>Queued jobs</h2>
    <DataTable id="queue" caption="Queued jobs by engine and config" columns={queueColumns} rows={fleet?.queued} empty="Nothing queued." />
    {apiUrl && <AddHost apiUrl={apiUrl} />}
  </>
);
