// Projects, programs and proofs. A proof's page follows it live: its record and its
// log are polled once a second until it ends (README "Console", "UI approach").
import { useEffect, useLayoutEffect, useRef, useState } from 'hono/jsx/dom';
import type { ConsoleProof, ExecutionRecord, Page, ProgramDetail, ProgramRecord, ProjectRecord, ProofDetail } from '../../ui/api-types.ts';
import { shortId } from '../../ui/format.ts';
import { isFinalProofState, may } from '../../ui/states.ts';
import { ExecutionView, ProgramView, ProjectView, ProjectsView, ProofView, ProofsView } from '../../ui/views/records.tsx';
import { EstimateView } from '../../ui/views/estimate.tsx';
import { attempt, fail, say, setHeading } from '../chrome.ts';
import { formOf, formQuery, pathId, saveFile, sleep, withParams } from '../dom.ts';
import type { OrgApi } from '../endpoints.ts';
import { firstPage, useDebounced, useLatest, usePaged } from '../hooks.ts';
import type { SignedInPage } from '../signed-in.ts';

/** How often a running proof's page reads its record and log. */
const POLL_MS = 1000;

// ---------------------------------------------------------------------------
// Lists with filters: reloaded as the filters change, once typing pauses.

function ProjectsPage({ api, initial }: { api: OrgApi; initial: Page<ProjectRecord> }) {
  const projects = usePaged(initial, api.projects);
  const filter = useDebounced((form: HTMLFormElement) => void attempt(() => projects.refilter(formQuery(form))));
  return <ProjectsView projects={projects.list} onFilter={(event) => filter(formOf(event))} onPage={projects.onPage} />;
}

export const projects: SignedInPage = async ({ api }) => <ProjectsPage api={api} initial={await api.projects(firstPage())} />;

function ProofsPage({ api, initial }: { api: OrgApi; initial: Page<ConsoleProof> }) {
  const proofs = usePaged(initial, api.proofs);
  const filter = useDebounced((form: HTMLFormElement) => void attempt(() => proofs.refilter(formQuery(form))));
  return <ProofsView proofs={proofs.list} onFilter={(event) => filter(formOf(event))} onPage={proofs.onPage} />;
}

export const proofs: SignedInPage = async ({ api }) => <ProofsPage api={api} initial={await api.proofs(firstPage())} />;

// ---------------------------------------------------------------------------
// A project and a program, with their lists

function ProjectPage({ api, project, programs }: { api: OrgApi; project: ProjectRecord; programs: Page<ProgramRecord> }) {
  const list = usePaged(programs, (query) => api.programs(withParams(query, { project_id: project.id })));
  return <ProjectView project={project} programs={list.list} onPage={list.onPage} />;
}

export const project: SignedInPage = async ({ api }) => {
  const id = pathId();
  const [record, programs] = await Promise.all([api.project(id), api.programs(firstPage({ project_id: id }))]);
  setHeading(`Project ${record.name}`);
  return <ProjectPage api={api} project={record} programs={programs} />;
};

interface ProgramPageProps {
  api: OrgApi;
  program: ProgramDetail;
  proofs: Page<ConsoleProof>;
  executions: ExecutionRecord[];
  canDelete: boolean;
}

function ProgramPage({ api, program, proofs, executions, canDelete }: ProgramPageProps) {
  const list = usePaged(proofs, (query) => api.proofs(withParams(query, { program_id: program.id })));
  const [shown, setShown] = useState(program);
  const remove = () => {
    if (!confirm('Delete this program’s ELF, VMEXE and logs? Its record stays; nothing more can be proved with it.')) return;
    void attempt(async () => {
      await api.deleteProgram(program.id);
      say('Program files deleted');
      setShown(await api.program(program.id));
    });
  };
  return (
    <ProgramView program={shown} proofs={list.list} executions={executions} onPage={list.onPage} onDelete={remove} canDelete={canDelete} />
  );
}

export const program: SignedInPage = async ({ api, org }) => {
  const id = pathId();
  const [record, proofs, executions, estimate] = await Promise.all([
    api.program(id),
    api.proofs(firstPage({ program_id: id })),
    api.executions(new URLSearchParams({ program_id: id })),
    api.programEstimate(id),
  ]);
  setHeading(`Program ${record.name}`);
  return (
    <>
      <ProgramPage api={api} program={record} proofs={proofs} executions={executions.items} canDelete={may(org.role, 'records.delete')} />
      <EstimateView estimate={estimate} />
    </>
  );
};

// ---------------------------------------------------------------------------
// An execution: its record, why it waits while queued, and the estimate of proving its run

export const execution: SignedInPage = async ({ api }) => {
  const record = await api.execution(pathId());
  const program = await api.program(record.program_uuid);
  setHeading(`Execution ${shortId(record.id)}`);
  const cycles = record.status === 'Succeeded' ? (record.num_instructions ?? record.total_cycle) : null;
  return (
    <>
      <ExecutionView execution={record} programName={program.name} />
      <EstimateView estimate={{ execution_id: record.id, cycles, estimate: record.estimate }} />
    </>
  );
};

// ---------------------------------------------------------------------------
// A proof, live

/**
 * Reads a proof's log from `offset` to its current end, handing each part over as it
 * comes (a long log takes several reads); returns where the next read starts.
 */
async function readLog(api: OrgApi, id: string, offset: number, onText: (text: string) => void): Promise<number> {
  for (;;) {
    const part = await api.proofLog(id, offset);
    if (!part.text) return offset;
    onText(part.text);
    offset = part.next;
  }
}

interface ProofPageProps {
  api: OrgApi;
  initial: ProofDetail;
  log: { text: string; next: number };
  canCancel: boolean;
  canDelete: boolean;
}

function ProofPage({ api, initial, log, canCancel, canDelete }: ProofPageProps) {
  const id = initial.id;
  const [proof, setProof] = useState(initial);
  const [logs, setLogs] = useState(log.text);
  const [follow, setFollow] = useState(true);
  const following = useLatest(follow);
  const shown = useRef(initial);
  const offset = useRef(log.next);
  const logsBox = useRef<HTMLPreElement | null>(null);
  /** Whether the log box was scrolled to its end before the text that just came. */
  const atEnd = useRef(false);

  /** Shows a newer record, saying so when its state changed. */
  const show = (next: ProofDetail) => {
    if (next.state !== shown.current.state) say(`State: ${next.state}`);
    shown.current = next;
    setProof(next);
  };

  const append = (more: string) => {
    const box = logsBox.current;
    atEnd.current ||= !!box && box.scrollTop + box.clientHeight >= box.scrollHeight - 8;
    setLogs((text) => text + more);
  };
  const readMore = async () => {
    offset.current = await readLog(api, id, offset.current, append);
  };

  // New text keeps the box at its end if it was there and the reader follows.
  useLayoutEffect(() => {
    const box = logsBox.current;
    if (box && atEnd.current && following.current) box.scrollTop = box.scrollHeight;
    atEnd.current = false;
  }, [logs]);

  // Until the proof is final: its record and (when following) its log, once a second;
  // then the log's tail once more.
  useEffect(() => {
    // Opened while following: the log shows its end.
    if (logsBox.current) logsBox.current.scrollTop = logsBox.current.scrollHeight;
    let left = false;
    void (async () => {
      while (!left && !isFinalProofState(shown.current.state)) {
        await sleep(POLL_MS);
        if (document.hidden || left) continue;
        try {
          show(await api.proof(id));
          if (following.current) await readMore();
        } catch (err) {
          fail(err);
        }
      }
      if (!left && !shown.current.deleted_at) await readMore().catch(fail);
    })();
    return () => {
      left = true;
    };
  }, []);

  const cancel = () => {
    if (!confirm('Cancel this proof?')) return;
    void attempt(async () => {
      say((await api.cancelProof(id)).message);
      show(await api.proof(id));
    });
  };
  const remove = () => {
    if (!confirm('Delete this proof’s input, proof files and logs? Its record stays, with its cost.')) return;
    void attempt(async () => {
      await api.deleteProof(id);
      say('Proof files deleted');
      show(await api.proof(id));
      setLogs('');
    });
  };
  // Fetched with the bearer token (a plain link could not send it), then handed to the browser.
  const download = (kind: string) => void attempt(async () => saveFile(await api.proofFile(id, kind), `${kind}-proof-${id}.json`));

  return (
    <ProofView
      proof={proof}
      logs={logs}
      follow={follow}
      logsRef={logsBox}
      onDownload={download}
      onCancel={cancel}
      canCancel={canCancel}
      onDelete={remove}
      canDelete={canDelete}
      onFollow={(event) => setFollow((event.currentTarget as HTMLInputElement).checked)}
    />
  );
}

export const proof: SignedInPage = async ({ api, org }) => {
  const id = pathId();
  const record = await api.proof(id);
  setHeading(`Proof ${shortId(record.id)}`);
  let text = '';
  // A deleted proof has no log left to read.
  const next = record.deleted_at ? 0 : await readLog(api, id, 0, (part) => (text += part));
  return (
    <ProofPage
      api={api}
      initial={record}
      log={{ text, next }}
      canCancel={may(org.role, 'jobs.cancel')}
      canDelete={may(org.role, 'records.delete')}
    />
  );
};
