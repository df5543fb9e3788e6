// Projects, programs and proofs: lists with filters and pagers, and a page per record.
import type { RefObject } from 'hono/jsx';
import type {
  ConsoleExecution,
  ConsoleProof,
  ExecutionRecord,
  Page,
  ProgramDetail,
  ProgramRecord,
  ProjectRecord,
  ProofDetail,
} from '../api-types.ts';
import { counted, formatCount, formatDate, formatUsd, jobGpusText, NONE, shortId, shownText } from '../format.ts';
import { links } from '../site.ts';
import { registerProgram, runExecution, submitProof } from '../snippets.ts';
import { isCancelable, PROOF_STATES, PROOF_STEPS } from '../states.ts';
import { type Column, DataTable, Pager } from '../table.tsx';
import { DateRange, EmptyState, type Fact, Facts, Snippet, StateBadge } from '../widgets.tsx';

/** A filter form: the client reloads the list as its fields change. */
type FilterEvents = { onFilter?: (event: Event) => void };
type Paging = { onPage?: (page: number) => void };
const noSubmit = (event: Event) => event.preventDefault();

const proofLink = (id: string) => (
  <a href={links.proof(id)}>
    <code>{shortId(id)}</code>
  </a>
);
const createdBy = (at: string, by: string) => `${formatDate(at)} by ${by}`;

/**
 * What an empty list's next step needs, known to the client only: this service's address
 * (the page's origin), whether the role may register and prove (jobs.submit), and a
 * config the organization already uses.
 */
export interface Guide {
  base: string;
  canSubmit: boolean;
  configId?: string;
}

/** For a role that may not submit: who may. */
const askSubmitters = <p>Members, admins and owners register programs and submit proofs; ask one of them, or for that role.</p>;

/** Registering a program: into a project, or (none yet) into a new one. */
export function RegisterStep({ guide, projectId }: { guide: Guide; projectId?: string }) {
  if (!guide.canSubmit) return askSubmitters;
  return (
    <>
      <p>
        {'Register a program with the API or cargo axiom: an ELF and its VMEXE (from '}
        <code>cargo openvm build</code>
        {'). Set '}
        <code>API_KEY</code>
        {' to a key from '}
        <a href={links.keys}>API keys</a>
        {guide.configId ? '.' : '; CONFIG_ID is the config your operator gives you (npm start prints the local one).'}
      </p>
      <Snippet
        label={projectId ? 'Register a program into this project' : 'Register a program (a new project is made for it)'}
        code={registerProgram(guide.base, projectId ? { projectId } : { projectName: 'my-project' }, guide.configId)}
      />
    </>
  );
}

/** Proving a program: the command, with its id. */
export function ProveStep({ guide, programId, programName }: { guide: Guide; programId: string; programName: string }) {
  if (!guide.canSubmit) return askSubmitters;
  return (
    <Snippet
      label={
        <>
          {'Prove '}
          <a href={links.program(programId)}>{programName}</a>
          {' (its input: entries of hex, 0x01 then raw bytes)'}
        </>
      }
      code={submitProof(guide.base, programId)}
    />
  );
}

// ---------------------------------------------------------------------------
// Projects

const projectColumns: Column<ProjectRecord>[] = [
  { header: 'Name', cell: (p) => <a href={links.project(p.id)}>{shownText(p.name)}</a> },
  { header: 'Programs', cell: (p) => formatCount(p.program_count), numeric: true },
  { header: 'Proofs run', cell: (p) => formatCount(p.total_proofs_run), numeric: true },
  { header: 'Last active', cell: (p) => formatDate(p.last_active_at) },
  { header: 'Created by', cell: (p) => p.created_by },
];

export interface ProjectsViewProps extends FilterEvents, Paging {
  projects?: Page<ProjectRecord>;
  /** A search is on: an empty list means no match, not no projects. */
  filtered?: boolean;
  guide?: Guide;
}

export const ProjectsView = ({ projects, filtered, guide, onFilter, onPage }: ProjectsViewProps) => (
  <>
    <form id="filters" class="filters" role="search" onInput={onFilter} onSubmit={noSubmit}>
      <label>
        Search
        <input type="search" name="search" placeholder="Project name" />
      </label>
      <label>
        Sort by
        <select name="sort_by">
          <option value="last_active_at">Last active</option>
          <option value="created_at">Created</option>
          <option value="name">Name</option>
        </select>
      </label>
      <label>
        Order
        <select name="sort_order">
          <option value="desc">Descending</option>
          <option value="asc">Ascending</option>
        </select>
      </label>
    </form>
    <DataTable
      id="projects"
      caption="Projects"
      columns={projectColumns}
      rows={projects?.items}
      empty={
        filtered || !guide ? (
          'No projects match.'
        ) : (
          <EmptyState id="projects-empty" title="No projects yet: a project is made when its first program is registered.">
            <RegisterStep guide={guide} />
          </EmptyState>
        )
      }
    />
    <Pager id="projects-pager" pagination={projects?.pagination} onGo={onPage} />
  </>
);

const programColumns: Column<ProgramRecord>[] = [
  { header: 'Name', cell: (p) => <a href={links.program(p.id)}>{shownText(p.name)}</a> },
  { header: 'Status', cell: (p) => <StateBadge state={p.status} /> },
  { header: 'Proofs run', cell: (p) => formatCount(p.proofs_run), numeric: true },
  { header: 'Created', cell: (p) => formatDate(p.created_at) },
  { header: 'Created by', cell: (p) => p.created_by },
];

const projectFacts = (p: ProjectRecord): Fact[] => [
  ['Id', <code>{p.id}</code>],
  ['Created', createdBy(p.created_at, p.created_by)],
  ['Programs', formatCount(p.program_count)],
  ['Proofs run', formatCount(p.total_proofs_run)],
];

export interface ProjectViewProps extends Paging {
  project?: ProjectRecord;
  programs?: Page<ProgramRecord>;
  guide?: Guide;
}

export const ProjectView = ({ project, programs, guide, onPage }: ProjectViewProps) => (
  <>
    <Facts id="project-facts" facts={project && projectFacts(project)} />
    <h2>Programs</h2>
    <DataTable
      id="programs"
      caption="Programs of the project"
      columns={programColumns}
      rows={programs?.items}
      empty={
        <EmptyState id="programs-empty" title="No programs in this project yet.">
          {guide && project && <RegisterStep guide={guide} projectId={project.id} />}
        </EmptyState>
      }
    />
    <Pager id="programs-pager" pagination={programs?.pagination} onGo={onPage} />
  </>
);

// ---------------------------------------------------------------------------
// Programs

const programFacts = (p: ProgramDetail): Fact[] => [
  ['Status', <StateBadge state={p.status} />],
  ...(p.deleted_at ? [['Files deleted', formatDate(p.deleted_at)] as Fact] : []),
  ['Project', <a href={links.project(p.project_id)}>{shownText(p.project_name)}</a>],
  ['Id', <code>{p.id}</code>],
  ['Program hash (ELF SHA-256)', <code>{p.program_hash}</code>],
  ['App exe commit', <code>{p.artifacts.app_exe_commit || NONE}</code>],
  ['App VM commit', <code>{p.artifacts.app_vm_commit}</code>],
  ['Config', `${p.config_uuid} (engine ${p.artifacts.engine}, openvm ${p.openvm_config})`],
  ['Artifacts', `ELF ${formatCount(p.artifacts.elf_size)} bytes, VMEXE ${formatCount(p.artifacts.vmexe_size)} bytes`],
  [
    'Proofs',
    Object.entries(p.proof_states)
      .map(([state, n]) => `${state}: ${n}`)
      .join(', ') || 'none yet',
  ],
  ['Created', createdBy(p.created_at, p.created_by)],
  ['Error', p.error_message || NONE],
];

const programProofColumns: Column<ConsoleProof>[] = [
  { header: 'Proof', cell: (p) => proofLink(p.id) },
  { header: 'State', cell: (p) => <StateBadge state={p.state} /> },
  { header: 'Type', cell: (p) => p.proof_type },
  { header: 'Created', cell: (p) => formatDate(p.created_at) },
  { header: 'Cost', cell: (p) => formatUsd(p.cost), numeric: true },
];

/** A proof's or execution's limits, in words (README "Job limits"). */
export const limitsText = (r: Pick<ExecutionRecord, 'cycle_limit' | 'cost_limit' | 'deadline_at'>): string =>
  [
    r.cycle_limit !== null ? `${formatCount(r.cycle_limit)} cycles` : null,
    r.cost_limit !== null ? formatUsd(r.cost_limit) : null,
    r.deadline_at !== null ? `done by ${formatDate(r.deadline_at)}` : null,
  ]
    .filter((x) => x !== null)
    .join(' · ') || NONE;

/** Why a queued proof or execution waits, in words (README "Why a job waits"); none once it runs. */
export const waitingText = (
  r: Pick<ExecutionRecord, 'waiting_reason' | 'waiting_detail' | 'jobs_ahead' | 'estimated_start_at'>,
): string => {
  if (r.waiting_reason === null) return NONE;
  const why =
    r.waiting_detail ??
    {
      no_agent: 'no online agent can take it',
      not_enough_gpus: 'no online agent has the GPUs it needs',
      org_quota: 'the organization is at its quota',
      org_budget: 'the organization is at its budget',
      jobs_ahead: 'jobs ahead of it',
      starting: 'next: starting',
    }[r.waiting_reason];
  const ahead = r.jobs_ahead ? ` (${counted(r.jobs_ahead, 'job')} ahead)` : '';
  const eta = r.estimated_start_at ? `; likely to start ${formatDate(r.estimated_start_at)} (estimated)` : '';
  return `${why}${ahead}${eta}`;
};

const executionColumns: Column<ExecutionRecord>[] = [
  {
    header: 'Execution',
    cell: (e) => (
      <a href={links.execution(e.id)}>
        <code>{shortId(e.id)}</code>
      </a>
    ),
  },
  { header: 'Status', cell: (e) => <StateBadge state={e.status} /> },
  { header: 'Mode', cell: (e) => e.mode },
  { header: 'Created', cell: (e) => formatDate(e.created_at) },
  { header: 'Instructions', cell: (e) => formatCount(e.num_instructions), numeric: true },
  { header: 'Limits', cell: (e) => limitsText(e) },
  { header: 'Waiting', cell: (e) => waitingText(e) },
];

export interface ProgramViewProps extends Paging {
  program?: ProgramDetail;
  proofs?: Page<ConsoleProof>;
  executions?: ExecutionRecord[];
  onDelete?: () => void;
  canDelete?: boolean;
  guide?: Guide;
}

/** What a program's empty list of proofs or executions says: the command, once it can be proved. */
function ProgramNextStep({ program, guide, run }: { program?: ProgramDetail; guide?: Guide; run?: boolean }) {
  if (!program || !guide) return null;
  if (program.deleted_at) return <p>Its files are deleted: nothing more can be run or proved with it.</p>;
  if (program.status !== 'ready') return <p>{`It can be run and proved once it is ready (now: ${program.status}).`}</p>;
  if (!guide.canSubmit) return askSubmitters;
  return run ? (
    <Snippet label="Run it (its cycles, for a proving estimate)" code={runExecution(guide.base, program.id)} />
  ) : (
    <ProveStep guide={guide} programId={program.id} programName={program.name} />
  );
}

export const ProgramView = ({ program, proofs, executions, onPage, onDelete, canDelete = false, guide }: ProgramViewProps) => (
  <>
    <Facts id="program-facts" facts={program && programFacts(program)} />
    <div class="actions">
      <button type="button" id="delete" class="danger" hidden={!program || !canDelete || !!program.deleted_at} onClick={onDelete}>
        Delete program files
      </button>
    </div>
    <h2>Proofs</h2>
    <DataTable
      id="proofs"
      caption="Proofs of the program"
      columns={programProofColumns}
      rows={proofs?.items}
      empty={
        <EmptyState id="proofs-empty" title="No proofs of this program yet.">
          <ProgramNextStep program={program} guide={guide} />
        </EmptyState>
      }
    />
    <Pager id="proofs-pager" pagination={proofs?.pagination} onGo={onPage} />
    <h2>Executions</h2>
    <DataTable
      id="executions"
      caption="Executions of the program"
      columns={executionColumns}
      rows={executions}
      empty={
        <EmptyState id="executions-empty" title="No executions of this program yet.">
          <ProgramNextStep program={program} guide={guide} run />
        </EmptyState>
      }
    />
  </>
);

// ---------------------------------------------------------------------------
// An execution

const executionFacts = (e: ConsoleExecution, programName?: string): Fact[] => [
  ['Status', <StateBadge id="execution-status" state={e.status} />],
  ...(e.deleted_at ? [['Files deleted', formatDate(e.deleted_at)] as Fact] : []),
  ['Program', <a href={links.program(e.program_uuid)}>{programName ?? shortId(e.program_uuid)}</a>],
  ['Id', <code>{e.id}</code>],
  ['Mode', e.mode],
  ['Cycles', formatCount(e.num_instructions ?? e.total_cycle)],
  ['Segments', formatCount(e.num_segments)],
  ['Cost', formatUsd(e.cost)],
  ['Created', createdBy(e.created_at, e.created_by)],
  ['Started', formatDate(e.launched_at)],
  ['Finished', formatDate(e.terminated_at)],
  ['Limits', <span id="execution-limits">{limitsText(e)}</span>],
  ['Waiting because', <span id="execution-waiting">{waitingText(e)}</span>],
  ['Start estimate', <span id="execution-start-estimate">{e.estimated_start_detail ?? NONE}</span>],
  ['Error', e.error_message || NONE],
];

/** An execution's page: its record; the client adds the proving estimate (EstimateView) below. */
export const ExecutionView = ({ execution, programName }: { execution?: ConsoleExecution; programName?: string }) => (
  <Facts id="execution-facts" facts={execution && executionFacts(execution, programName)} />
);

// ---------------------------------------------------------------------------
// Proofs

const proofColumns: Column<ConsoleProof>[] = [
  { header: 'Proof', cell: (p) => proofLink(p.id) },
  { header: 'Program', cell: (p) => <a href={links.program(p.program_uuid)}>{p.program_name}</a> },
  { header: 'State', cell: (p) => <StateBadge state={p.state} /> },
  { header: 'Created', cell: (p) => formatDate(p.created_at) },
  { header: 'Cost', cell: (p) => formatUsd(p.cost), numeric: true },
];

export interface ProofsViewProps extends FilterEvents, Paging {
  proofs?: Page<ConsoleProof>;
  /** A filter is on: an empty list means no match, not no proofs. */
  filtered?: boolean;
  guide?: Guide;
  /** A program of the organization to prove (its latest), for the empty list's command; none: register one first. */
  program?: ProgramRecord;
}

/** No proofs at all: prove a program, or register one first. */
function NoProofs({ guide, program }: { guide: Guide; program?: ProgramRecord }) {
  return (
    <EmptyState id="proofs-empty" title="No proofs yet.">
      {program ? (
        <ProveStep guide={guide} programId={program.id} programName={program.name} />
      ) : (
        <>
          <p>
            {'A proof proves a program: the organization has none yet. '}
            <a href={links.projects}>Projects</a>
            {' says how to register one.'}
          </p>
          <RegisterStep guide={guide} />
        </>
      )}
    </EmptyState>
  );
}

export const ProofsView = ({ proofs, filtered, guide, program, onFilter, onPage }: ProofsViewProps) => (
  <>
    <form id="filters" class="filters" role="search" onInput={onFilter} onSubmit={noSubmit}>
      <label>
        Search
        <input type="search" name="search" placeholder="Proof id, program or creator" />
      </label>
      <label>
        State
        <select name="state">
          <option value="">Any</option>
          {PROOF_STATES.map((s) => (
            <option value={s}>{s}</option>
          ))}
        </select>
      </label>
      <DateRange />
    </form>
    <DataTable
      id="proofs"
      caption="Proofs"
      columns={proofColumns}
      rows={proofs?.items}
      empty={filtered || !guide ? 'No proofs match these filters.' : <NoProofs guide={guide} program={program} />}
    />
    <Pager id="proofs-pager" pagination={proofs?.pagination} onGo={onPage} />
  </>
);

/** The steps so far: done, the current one, or where it went wrong instead of succeeding. */
function Timeline({ state }: { state?: ProofDetail['state'] }) {
  const failed = state === 'Failed' || state === 'Canceling' || state === 'Canceled';
  const at = state ? PROOF_STEPS.indexOf(state) : -1;
  const steps = failed ? [...PROOF_STEPS.slice(0, -1), state] : state ? PROOF_STEPS : [];
  const stepClass = (step: string, i: number) =>
    step === state ? (failed ? 'bad' : state === 'Succeeded' ? 'done' : 'current') : !failed && i < at ? 'done' : undefined;
  return (
    <ol id="timeline" class="timeline" aria-label="Proof state">
      {steps.map((step, i) => (
        <li class={stepClass(step, i)} aria-current={step === state ? 'step' : undefined}>
          {step}
        </li>
      ))}
    </ol>
  );
}

/** `engine`: the proof's program's config's, to say what it really holds (a dev proof: no GPU). */
const proofFacts = (p: ProofDetail, engine?: string): Fact[] => [
  ['State', <StateBadge id="proof-state" state={p.state} />],
  ...(p.deleted_at ? [['Files deleted', formatDate(p.deleted_at)] as Fact] : []),
  ['Program', <a href={links.program(p.program_uuid)}>{p.program_name}</a>],
  ['Project', <a href={links.project(p.project_id)}>{shownText(p.project_name)}</a>],
  ['Id', <code>{p.id}</code>],
  ['Type', p.proof_type],
  ['Cost', formatUsd(p.cost)],
  ['Runs on', `${engine ? jobGpusText(engine, p.num_gpus) : NONE}${p.machine_type ? `, machine type ${p.machine_type}` : ''}`],
  ['Instructions', formatCount(p.num_instructions)],
  ['Cells used', formatCount(p.cells_used)],
  ['Created', createdBy(p.created_at, p.created_by)],
  ['Started', formatDate(p.launched_at)],
  ['Finished', formatDate(p.terminated_at)],
  ['Attempt', p.job ? formatCount(p.job.attempt) : NONE],
  ['Limits', <span id="proof-limits">{limitsText(p)}</span>],
  ['Waiting because', <span id="proof-waiting">{waitingText(p)}</span>],
  ['Start estimate', <span id="proof-start-estimate">{p.estimated_start_detail ?? NONE}</span>],
  ['Error', p.error_message || NONE],
];

export interface ProofViewProps {
  proof?: ProofDetail;
  /** The engine of the proof's config (its program's), to say what the proof runs on. */
  engine?: string;
  /** The job's log so far. */
  logs?: string;
  follow?: boolean;
  /** The log's box, which the client keeps scrolled to the end while following. */
  logsRef?: RefObject<unknown>;
  onDownload?: (kind: string) => void;
  onCancel?: () => void;
  /** Whether the signed-in role may cancel proofs (a viewer may not): else no Cancel button. */
  canCancel?: boolean;
  onDelete?: () => void;
  /** Whether the signed-in role may delete records (admins and owners): else no Delete button. */
  canDelete?: boolean;
  onFollow?: (event: Event) => void;
}

export const ProofView = ({
  proof,
  engine,
  logs,
  follow = true,
  logsRef,
  onDownload,
  onCancel,
  canCancel = true,
  onDelete,
  canDelete = false,
  onFollow,
}: ProofViewProps) => (
  <>
    <Timeline state={proof?.state} />
    <Facts id="proof-facts" facts={proof && proofFacts(proof, engine)} />
    <div class="actions">
      <span id="downloads">
        {(proof?.deleted_at ? [] : (proof?.files ?? [])).map((kind) => (
          <button type="button" class="ghost" onClick={() => onDownload?.(kind)}>
            {`Download ${kind} proof`}
          </button>
        ))}
      </span>
      <button type="button" id="cancel" class="danger" hidden={!proof || !canCancel || !isCancelable(proof.state)} onClick={onCancel}>
        Cancel proof
      </button>
      <button
        type="button"
        id="delete"
        class="danger"
        hidden={!proof || !canDelete || !!proof.deleted_at || isCancelable(proof.state)}
        onClick={onDelete}
      >
        Delete proof files
      </button>
    </div>
    <h2 id="logs-heading">Logs</h2>
    <label class="inline">
      <input type="checkbox" id="follow" checked={follow} onChange={onFollow} /> Follow while running
    </label>
    <pre id="logs" class="logs" tabindex={0} aria-labelledby="logs-heading" aria-live="off" ref={logsRef}>
      {logs}
    </pre>
  </>
);
