// The routes proofs and executions share over the public API, made once: the list of a
// program's runs, one run, its logs and its event stream (GET /v1/proofs, /{proof_id},
// /{proof_id}/logs, /{proof_id}/events; the same under /v1/executions). Each run kind
// says what differs (its names, record, statements and words) in a RunKind; the routes
// are registered one by one (list(), get(), logs(), events()), so a kind keeps its own
// routes (a proof's files, its cancel) where they stand in its OpenAPI document.
//
// Every route reads in the request's one round trip, with the API key's lookup
// (src/middleware/auth.ts asCaller); a missing run is 404, confirmed on the primary.
import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import { zValidator } from '@hono/zod-validator';
import type { RouteConfig } from '@hono/zod-openapi';
import type { SQL } from 'drizzle-orm';
import type { RunnableQuery } from 'drizzle-orm/runnable-query';
import type { Context, Env } from 'hono';
import type { AppEnv } from '../../app-env.ts';
import type { Db } from '../../db/client.ts';
import { jobIdOfSubject, logPageQuery } from '../../jobs/logs.ts';
import { refuseDeleted, validationHook } from '../../lib/errors.ts';
import { one } from '../../lib/pages.ts';
import { errorResponses, PaginationQuery, pageOf, Uuid } from '../../lib/schemas.ts';
import { asCaller, declaredAction, orgOfKey } from '../../middleware/auth.ts';
import { preparedSteps } from '../../db/prepared.ts';
import type { Action } from '../../auth/permissions.ts';
import type { Statement } from '../../db/batch.ts';
import { archivedQuery, readArchived, type ArchiveKind } from '../retention/archive.ts';
import { door } from '../../middleware/door.ts';
import { jobOfSubject, runsPage, type EventSubject, type RunJobKind } from './data.ts';
import { eventStream, eventStreamDoc, EventStreamHeaders } from './events.ts';
import { logPageResponse, logRouteDoc, LogPageQuerySchema } from './logs.ts';

/** One statement answering rows of `R` (a drizzle builder: awaited, or in a batch). */
type Rows<R> = RunnableQuery<R[], 'sqlite'> & PromiseLike<R[]>;

/** What a kind of run (a proof, an execution) tells the shared routes. */
export interface RunKind<Row> {
  /** The OpenAPI tag, and the list's noun: `proofs`. */
  tag: string;
  /** The record's noun in the routes' words: `proof`. */
  noun: string;
  /** As errors name it: `Proof` ("Proof not found"). */
  name: string;
  /** The path parameter naming one run: `proof_id`. */
  param: string;
  /** The kind of the job working for it (its logs are the job's). */
  job: RunJobKind;
  /** Its kind in the archive (src/features/retention/archive.ts): an archived run is read from R2 by id. */
  archive: ArchiveKind;
  /** The record as the API answers it, its page's schema name, and the function that makes it. */
  schema: z.ZodTypeAny;
  pageName: string;
  toRecord: (row: Row) => unknown;
  /** The run by id, scoped to `org`. */
  query: (db: Db, org: SQL<string>, id: string) => Rows<Row>;
  /** A page of a program's runs with the program's counter of them (src/features/runs/data.ts programRuns). */
  ofProgram: (
    db: Db,
    org: SQL<string>,
    programId: string,
    page: number,
    pageSize: number,
  ) => { program: Rows<{ total: number }>; rows: Rows<Row> };
  /** What its event stream reads and sends. */
  events: EventSubject;
  /** The words that differ from kind to kind. */
  summaries: { get: string; got: string; logs: string; events: string };
  /** Its terminal states, for the event stream's description. */
  terminal: string;
}

/**
 * Documents a route whose handler answers a Response of its own (plain text, an event
 * stream) rather than a typed JSON body, as `openapi()` documents one, and answers its
 * path in Hono's spelling. The caller mounts the handler with the route's middleware
 * and its validators in openapi()'s order (query, then params, then headers).
 */
export function documented<E extends Env>(api: OpenAPIHono<E>, route: RouteConfig): string {
  api.openAPIRegistry.registerPath(route);
  return route.path.replaceAll(/\/{(.+?)}/g, '/:$1');
}

/** The shared routes of a run kind, registered on `api` one by one, and its one read. */
export function runRoutes<Row extends { deleted_at: string | null }>(api: OpenAPIHono<AppEnv>, kind: RunKind<Row>) {
  const Params = z.object({ [kind.param]: Uuid(kind.param) });

  /**
   * The one read's statements (src/db/prepared.ts): a GET of a run is the most frequent
   * request there is. Its archive stub is looked for only in the final attempt: a run
   * found needs none, and one a replica did not find is asked for again on the primary.
   */
  const readSteps = preparedSteps(
    (v: { keyHash: string; id: string; action: Action; archive: boolean }) => `${v.action} ${v.archive}`,
    (db, p, v) => {
      const org = orgOfKey(p.keyHash, v.action);
      return { run: kind.query(db, org, p.id) as Statement, archived: v.archive ? archivedQuery(db, org, kind.archive, p.id) : undefined };
    },
  );

  /**
   * The caller's run, in the request's one read (404, confirmed on the primary, when
   * there is none). A run moved to the archive is read from its R2 object, as D1
   * answered it: its stub is found by the primary's read (one round trip more than a
   * live run's, and one R2 read, for archived runs only).
   */
  async function read(c: Context<AppEnv>, id: string): Promise<Row> {
    const { run, archived } = await asCaller(
      c,
      // The same statements as `org` (the key's organization, for the route's action) would build, built once.
      (_org, { final }) => readSteps(c.get('db'), { keyHash: c.get('apiKeyHash'), id, action: declaredAction(c), archive: final }),
      ({ run }) => run.length > 0,
    );
    if (run.length > 0 || !archived?.length) return one(run, kind.name);
    const row = await readArchived<Row>(c.env.ARTIFACTS, archived[0], id);
    return one(row ? [row] : [], kind.name);
  }

  return {
    read,
    Params,

    /** GET /: a page of a program's runs, newest first. */
    list() {
      api.openapi(
        createRoute({
          method: 'get',
          operationId: `list${kind.name}s`,
          path: '/',
          middleware: [door.apiKey('records.read', { rate: 'reads' })],
          tags: [kind.tag],
          summary: `List the ${kind.tag} of a program`,
          description: `The program's ${kind.tag} still in the service's database: ${kind.tag} finished more than ARCHIVE_AFTER_DAYS (30) ago move to the archive and leave this list (GET by id still answers them, unchanged); \`pagination.total\` counts them all (docs/operators.md "The archive").`,
          request: { query: PaginationQuery.extend({ program_id: z.uuid() }) },
          responses: {
            200: {
              description: `A page of ${kind.tag}, newest first`,
              content: { 'application/json': { schema: pageOf(kind.schema, kind.pageName) } },
            },
            ...errorResponses(404, 422),
          },
        }),
        async (c) => {
          const { program_id, page, page_size } = c.req.valid('query');
          // The total is the program's counter (kept by a trigger), not a count of its runs.
          const read = await asCaller(
            c,
            (org) => kind.ofProgram(c.get('db'), org, program_id, page, page_size),
            ({ program }) => program.length > 0,
          );
          return c.json(runsPage(read, kind.toRecord, page, page_size), 200);
        },
      );
    },

    /** GET /{id}: one run. */
    get() {
      api.openapi(
        createRoute({
          method: 'get',
          operationId: `get${kind.name}`,
          path: `/{${kind.param}}`,
          middleware: [door.apiKey('records.read', { rate: 'reads' })],
          tags: [kind.tag],
          summary: kind.summaries.get,
          description: `Archived ${kind.tag} (finished more than ARCHIVE_AFTER_DAYS ago) answer the same record, read from the archive (docs/operators.md "The archive"); so do their logs.`,
          request: { params: Params },
          responses: {
            200: { description: kind.summaries.got, content: { 'application/json': { schema: kind.schema } } },
            ...errorResponses(404, 422),
          },
        }),
        async (c) => c.json(kind.toRecord(await read(c, c.req.valid('param')[kind.param])), 200),
      );
    },

    /** GET /{id}/logs: a page of its job's log, plain text. */
    logs() {
      const doc = logRouteDoc(kind.noun);
      const path = documented(api, {
        method: 'get',
        operationId: `get${kind.name}Logs`,
        path: `/{${kind.param}}/logs`,
        tags: [kind.tag],
        summary: kind.summaries.logs,
        ...doc,
        request: { params: Params, query: LogPageQuerySchema },
        responses: { ...doc.responses, ...errorResponses(404, 422) },
      });
      api.get(
        path,
        door.apiKey('records.read', { rate: 'reads' }),
        zValidator('query', LogPageQuerySchema, validationHook),
        zValidator('param', Params, validationHook),
        async (c) => {
          const id = c.req.valid('param')[kind.param];
          const { offset } = c.req.valid('query');
          // One round trip: the key, the run, its job's log length and the index rows of the
          // page. The archive stub only in the final attempt, as read() asks for it.
          const { run, job, rows, archived } = await asCaller(
            c,
            (org, { final }) => ({
              run: kind.query(c.get('db'), org, id),
              job: jobOfSubject(c.get('db'), kind.job, id),
              rows: logPageQuery(c.get('db'), jobIdOfSubject(kind.job, id), offset),
              archived: final ? archivedQuery(c.get('db'), org, kind.archive, id) : undefined,
            }),
            ({ run }) => run.length > 0,
          );
          if (run.length === 0 && archived?.length) {
            // An archived run: its job's row is in its line, its log where it was (the
            // compacted object, or chunks read by listing: their index rows went with the job).
            const line = await readArchived<Row & { job: (typeof job)[number] | null }>(c.env.ARTIFACTS, archived[0], id);
            refuseDeleted(one(line ? [line] : [], kind.name), `${kind.name} ${id}`);
            return logPageResponse(c.env.ARTIFACTS, c.req.url, line?.job ?? undefined, [], offset);
          }
          // A deleted run's log is gone with its files: 404 saying so (src/features/retention).
          refuseDeleted(one(run, kind.name), `${kind.name} ${id}`);
          return logPageResponse(c.env.ARTIFACTS, c.req.url, job[0], rows, offset);
        },
      );
    },

    /** GET /{id}/events: its state and logs as Server-Sent Events. */
    events() {
      const doc = eventStreamDoc(kind.noun, kind.terminal);
      const path = documented(api, {
        method: 'get',
        operationId: `stream${kind.name}Events`,
        path: `/{${kind.param}}/events`,
        tags: [kind.tag],
        summary: kind.summaries.events,
        description: doc.description,
        request: { params: Params, headers: EventStreamHeaders },
        responses: { ...doc.responses, ...errorResponses(400, 404, 422) },
      });
      api.get(
        path,
        door.apiKey('records.read', { rate: 'reads' }),
        zValidator('param', Params, validationHook),
        zValidator('header', EventStreamHeaders, validationHook),
        (c) => eventStream(c, kind.events, c.req.valid('param')[kind.param]),
      );
    },
  };
}
