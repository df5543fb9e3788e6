// Projects, programs and proofs. A proof's page follows it live: its record and its
// log are polled once a second until it ends (README "Console", "UI approach").
import { useEffect, useLayoutEffect, useRef, useState } from 'hono/jsx/dom';
import type { ConsoleProof, ExecutionRecord, Page, ProgramDetail, ProgramRecord, ProjectRecord, ProofDetail } from '../../ui/api-types.ts';
import { shortId } from '../../ui/format.ts';
import { isFinalProofState, may } from '../../ui/states.ts';
import { ExecutionView, type Guide, ProgramView, ProjectView, ProjectsView, ProofView, ProofsView } from '../../ui/views/records.tsx';
import { EstimateView } from '../../ui/views/estimate.tsx';
import { attempt, fail, say, setHeading } from '../chrome.ts';
import { formOf, formQuery, pathId, saveFile, sleep, withParams } from '../dom.ts';
import type { OrgApi } from '../endpoints.ts';
import { firstPage, useDebounced, useLatest, usePaged } from '../hooks.ts';
import { ask } from '../confirm.tsx';
import { guideFor, type SignedInPage } from '../signed-in.ts';

/** How often a running proof's page reads its record and log. */
const POLL_MS = 1000;

// ---------------------------------------------------------------------------
// Lists with filters: reloaded as the filters change, once typing pauses.

/** A list whose filter form narrows it: `filtered` while any of `narrowing` is set (an empty list then means no match). */
function useFiltered<T>(paged: ReturnType<typeof usePaged<T>>, narrowing: readonly string[]) {
  const [filtered, setFiltered] = useState(false);
  const filter = useDebounced((form: HTMLFormElement) => {
    const query = formQuery(form);
    setFiltered(narrowing.some((name) => query.has(name)));
    void attempt(() => paged.refilter(query));
  });
  return { filtered, onFilter: (event: Event) => filter(formOf(event)) };
}

function ProjectsPage({ api, initial, guide }: { api: OrgApi; initial: Page<ProjectRecord>; guide: Guide }) {
  const projects = usePaged(initial, api.projects);
  const { filtered, onFilter } = useFiltered(projects, ['search']);
  return <ProjectsView projects={projects.list} filtered={filtered} guide={guide} onFilter={onFilter} onPage={projects.onPage} />;
}

export const projects: SignedInPage = async (signedIn) => (
  <ProjectsPage api={signedIn.api} initial={await signedIn.api.projects(firstPage())} guide={guideFor(signedIn)} />
);

interface ProofsPageProps {
  api: OrgApi;
  initial: Page<ConsoleProof>;
  guide: Guide;
  program?: ProgramRecord;
}

function ProofsPage({ api, initial, guide, program }: ProofsPageProps) {
  const proofs = usePaged(initial, api.proofs);
  const { filtered, onFilter } = useFiltered(proofs, ['search', 'state', 'from', 'to']);
  return <ProofsView proofs={proofs.list} filtered={filtered} guide={guide} program={program} onFilter={onFilter} onPage={proofs.onPage} />;
}

export const proofs: SignedInPage = async (signedIn) => {
  const { api } = signedIn;
  const initial = await api.proofs(firstPage());
  // No proofs yet: the next step proves the organization's latest program, if it has one.
  const program = initial.pagination.total ? undefined : (await api.programs(firstPage({ page_size: '1' }))).items[0];
  return <ProofsPage api={api} initial={initial} guide={guideFor(signedIn, program?.config_uuid)} program={program} />;
};

// ---------------------------------------------------------------------------
// A project and a program, with their lists

interface ProjectPageProps {
  api: OrgApi;
  project: ProjectRecord;
  programs: Page<ProgramRecord>;
  guide: Guide;
}

function ProjectPage({ api, project, programs, guide }: ProjectPageProps) {
  const list = usePaged(programs, (query) => api.programs(withParams(query, { project_id: project.id })));
  return <ProjectView project={project} programs={list.list} guide={guide} onPage={list.onPage} />;
}

export const project: SignedInPage = async (signedIn) => {
  const { api } = signedIn;
  const id = pathId();
  const [record, programs] = await Promise.all([api.project(id), api.programs(firstPage({ project_id: id }))]);
  setHeading(`Project ${record.name}`);
  return <ProjectPage api={api} project={record} programs={programs} guide={guideFor(signedIn)} />;
};

interface ProgramPageProps {
  api: OrgApi;
  program: ProgramDetail;
  proofs: Page<ConsoleProof>;
  executions: ExecutionRecord[];
  canDelete: boolean;
  guide: Guide;
}

function ProgramPage({ api, program, proofs, executions, canDelete, guide }: ProgramPageProps) {
  const list = usePaged(proofs, (query) => api.proofs(withParams(query, { program_id: program.id })));
  const [shown, setShown] = useState(program);
  const remove = async () => {
    const yes = await ask({
      title: `Delete the files of the program ${program.name}?`,
      body: <p>Its ELF, VMEXE and logs are deleted; its record and its proofs’ records stay. Nothing more can be run or proved with it.</p>,
      action: 'Delete program files',
      irreversible: true,
    });
    if (!yes) return;
    await attempt(async () => {
      await api.deleteProgram(program.id);
      say(`The files of ${program.name} are deleted.`);
      setShown(await api.program(program.id));
    });
  };
  return (
    <ProgramView
      program={shown}
      proofs={list.list}
      executions={executions}
      guide={guide}
      onPage={list.onPage}
      onDelete={() => void remove()}
      canDelete={canDelete}
    />
  );
}

export const program: SignedInPage = async (signedIn) => {
  const { api, org } = signedIn;
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
      <ProgramPage
        api={api}
        program={record}
        proofs={proofs}
        executions={executions.items}
        canDelete={may(org.role, 'records.delete')}
        guide={guideFor(signedIn, record.config_uuid)}
      />
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
  /** Its program's config's engine: what the proof runs on. */
  engine: string;
  log: { text: string; next: number };
  canCancel: boolean;
  canDelete: boolean;
}

function ProofPage({ api, initial, engine, log, canCancel, canDelete }: ProofPageProps) {
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

  const name = `${shortId(id)} of ${initial.program_name}`;
  const cancel = async () => {
    const yes = await ask({
      title: `Cancel the proof ${name}?`,
      body: <p>A queued proof ends Canceled at once; a running one stops within seconds and is charged only up to the cancel.</p>,
      action: 'Cancel proof',
    });
    if (!yes) return;
    await attempt(async () => {
      say((await api.cancelProof(id)).message);
      show(await api.proof(id));
    });
  };
  const remove = async () => {
    const yes = await ask({
      title: `Delete the files of the proof ${name}?`,
      body: <p>Its input, its proof files and its logs are deleted; its record stays, with its cost.</p>,
      action: 'Delete proof files',
      irreversible: true,
    });
    if (!yes) return;
    await attempt(async () => {
      await api.deleteProof(id);
      say('The proof’s files are deleted.');
      show(await api.proof(id));
      setLogs('');
    });
  };
  // Fetched with the bearer token (a plain link could not send it), then handed to the browser.
  const download = (kind: string) => void attempt(async () => saveFile(await api.proofFile(id, kind), `${kind}-proof-${id}.json`));

  return (
    <ProofView
      proof={proof}
      engine={engine}
      logs={logs}
      follow={follow}
      logsRef={logsBox}
      onDownload={download}
      onCancel={() => void cancel()}
      canCancel={canCancel}
      onDelete={() => void remove()}
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
  // A deleted proof has no log left to read. Its program says its engine: what it runs on.
  const [next, programRecord] = await Promise.all([
    record.deleted_at ? 0 : readLog(api, id, 0, (part) => (text += part)),
    api.program(record.program_uuid),
  ]);
  return (
    <ProofPage
      api={api}
      initial={record}
      engine={programRecord.artifacts.engine}
      log={{ text, next }}
      canCancel={may(org.role, 'jobs.cancel')}
      canDelete={may(org.role, 'records.delete')}
    />
  );
};
