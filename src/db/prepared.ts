// Statements whose SQL drizzle builds once per isolate, not once per request. Building a
// statement is most of what drizzle costs: under bench:dispatch, drizzle's own JS was a
// fifth of the Worker's CPU, most of it spent turning the same hot statements (a claim's
// batch, a job token's lookup, a completion's batch) into the same SQL text again and
// again. A prepared statement is written as it always is, with drizzle's placeholders
// (`sql.placeholder`) where its values go; its SQL, its parameter list and drizzle's own
// mapping of its results are made the first time, and each use fills in the values
// (encoded by their column, as drizzle's fillPlaceholders does) and runs in a batch
// (batchByName) like any other statement, or alone (`.all()`), its rows read back by
// drizzle's mapper. A value goes in only through its placeholder: what a builder writes
// with a plain value is built into the SQL once, for every use.
//
//   const leaseOf = prepared((db, p) => db.select().from(leases).where(eq(leases.token_hash, p.hash)));
//   const { rows } = await batchByName(db, { rows: leaseOf(db, { hash }) });
//
// A batch whose shape depends on its values (a list's length, a kind) is prepared per
// shape: preparedSteps(shapeOf, build) keeps one record of templates per shape key.
import { Column, is, Param, Placeholder, SQL, sql, Subquery } from 'drizzle-orm';
import type { Statement, Step, Steps } from './batch.ts';
import { openDb, type Db } from './client.ts';

/**
 * The stand-ins a prepared statement's builder writes its values as, one per value, by
 * name: each is drizzle's placeholder for it (`sql.placeholder(name)`), typed as the
 * value it stands for, so that a builder hands it wherever its value would go (drizzle
 * takes a placeholder wherever it takes a value, and fills it at each use). A builder
 * must not compute with one (`p.now + 1` is not SQL): what it computes it passes as a
 * value of its own.
 */
export type Placeholders<V> = { readonly [K in keyof V]: V[K] };

/** What drizzle's batch asks of a statement (drizzle-orm/d1/session.js, SQLiteD1Session.batch). */
interface BuiltQuery {
  getQuery(): { sql: string; params: unknown[] };
  stmt: D1PreparedStatement;
  mapResult(result: unknown, isFromBatch?: boolean): unknown;
}

/** A statement as drizzle built it once: its SQL, its parameters (placeholders among them) and its result mapper. */
class Template {
  /** How each parameter is filled (drizzle's fillPlaceholders, worked out once): as built, or a placeholder's value, encoded by its column when it stands for one. */
  private readonly fills: ((values: Record<string, unknown>) => unknown)[];
  constructor(
    readonly sql: string,
    params: unknown[],
    readonly mapper: Pick<BuiltQuery, 'mapResult'>,
  ) {
    this.fills = params.map((param) => {
      if (is(param, Placeholder)) return (values) => valueOf(values, param.name);
      if (is(param, Param) && is(param.value, Placeholder)) {
        const { encoder, value } = param;
        return (values) => encoder.mapToDriverValue(valueOf(values, (value as Placeholder).name));
      }
      return () => param;
    });
  }

  /** The parameters with `values` filled in. */
  fill(values: Record<string, unknown>): unknown[] {
    return this.fills.map((f) => f(values));
  }
}

function valueOf(values: Record<string, unknown>, name: string): unknown {
  if (!Object.hasOwn(values, name)) throw new Error(`No value for placeholder "${name}" was provided`);
  return values[name];
}

/** A D1 session that runs nothing, for drizzle to build over (a statement's SQL needs no database). */
const noDatabase: D1DatabaseSession = {
  prepare: () => ({}) as D1PreparedStatement,
  batch: () => Promise.reject(new Error('a template database runs nothing')),
  getBookmark: () => null,
};
const buildOnly = openDb(noDatabase);

/** The stand-ins of a builder's values: each property read is the placeholder named after it. */
const standIns = <V>(): Placeholders<V> => new Proxy({}, { get: (_, name) => sql.placeholder(String(name)) }) as Placeholders<V>;

/** Whether `statement` is one drizzle's batch can prepare (every query builder is). */
const isBuildable = (statement: Statement): statement is Statement & { _prepare(): BuiltQuery } =>
  typeof (statement as { _prepare?: unknown })._prepare === 'function';

function template(statement: Statement): Template {
  if (!isBuildable(statement)) throw new Error('a prepared statement must be a query builder');
  const built = statement._prepare();
  const { sql: text, params } = built.getQuery();
  return new Template(text, params, { mapResult: selectMapper(built) ?? ((result, isFromBatch) => built.mapResult(result, isFromBatch)) });
}

/** What drizzle's prepared query keeps to map its rows (drizzle-orm/d1/session.js D1PreparedQuery): its own, read once per template. */
interface RowPlan {
  executeMethod?: 'run' | 'all' | 'get';
  fields?: { path: string[]; field: unknown }[];
  customResultMapper?: unknown;
}

type Decoder = { mapFromDriverValue(value: unknown): unknown };

/** An SQL's decoder: drizzle keeps it on the SQL (`decoder`, internal to its types). */
const decoderIn = (holder: object): Decoder => (holder as { decoder: Decoder }).decoder;

/** A field's decoder, as drizzle's mapResultRow picks it (drizzle-orm/utils.js). */
function decoderOf(field: unknown): Decoder {
  if (is(field, Column)) return field;
  if (is(field, SQL)) return decoderIn(field);
  if (is(field, Subquery)) return decoderIn(field._.sql);
  return decoderIn((field as SQL.Aliased).sql);
}

/**
 * The rows of a select whose fields are all at the top level (no join's nested objects),
 * mapped by a plan made once: drizzle's mapResultRow asks of every value of every row
 * what kind of field it is (`is()`, which walks prototypes) and walks its path with an
 * iterator, a fifth of a GET's drizzle time (bench:api --profile). The same decoders, by
 * position, null left null, as it does. A batch's rows come as objects keyed by column
 * name; their values are read in order, as drizzle's d1ToRawMapping does. A write's
 * `returning` rows are such rows too. Null for any other statement (a write's `run`
 * result, a `get`, a join's nested fields, a custom mapper): drizzle's mapper maps those.
 */
function selectMapper(built: BuiltQuery): BuiltQuery['mapResult'] | null {
  const { executeMethod, fields, customResultMapper } = built as BuiltQuery & RowPlan;
  if (executeMethod !== 'all' || !fields || customResultMapper || fields.some((f) => f.path.length !== 1)) return null;
  const names = fields.map((f) => f.path[0]);
  const decoders = fields.map((f) => decoderOf(f.field));
  const mapRow = (values: unknown[]) => {
    const row: Record<string, unknown> = {};
    for (let i = 0; i < names.length; i++) {
      const value = values[i];
      row[names[i]] = value === null ? null : decoders[i].mapFromDriverValue(value);
    }
    return row;
  };
  return (result, isFromBatch) => {
    if (!isFromBatch) return (result as unknown[][]).map(mapRow);
    const rows = (result as D1Result<Record<string, unknown>>).results.map((r) => Object.values(r));
    // Two columns of one name are one key of a row object: drizzle's mapper, as ever (the same loss).
    if (rows.some((values) => values.length !== names.length)) return built.mapResult(result, isFromBatch);
    return rows.map(mapRow);
  };
}

/**
 * One use of a template, with its values: what drizzle's batch prepares, binds and maps
 * like its own statements. Typed as the statement it was built from (`_`: its dialect
 * and its result), which is all a batch item is to drizzle's types.
 */
class PreparedUse<S extends Statement> {
  declare readonly _: S['_'];
  constructor(
    private readonly db: Db,
    private readonly template: Template,
    private readonly values: Record<string, unknown>,
  ) {}

  /** drizzle's batch calls this on each statement it runs. */
  _prepare(): BuiltQuery {
    const { sql: text, mapper } = this.template;
    const filled = this.template.fill(this.values);
    return {
      getQuery: () => ({ sql: text, params: filled }),
      stmt: this.client().prepare(text),
      mapResult: (result, isFromBatch) => mapper.mapResult(result, isFromBatch),
    };
  }

  /** The D1 binding or session the request's drizzle runs on (drizzle keeps it as `$client`). */
  private client(): D1Database | D1DatabaseSession {
    const { $client } = this.db as { $client?: D1Database | D1DatabaseSession };
    if (!$client) throw new Error('drizzle keeps no $client on this database');
    return $client;
  }

  /**
   * The statement run alone, its rows read as arrays and mapped by drizzle (as a select's
   * own `.all()`): for a join whose tables share column names, which a batch's rows, keyed
   * by name, would mix up.
   */
  async all(): Promise<S['_']['result']> {
    const built = this._prepare();
    return built.mapResult(await built.stmt.bind(...built.getQuery().params).raw(), false);
  }
}

/**
 * A statement built once (on first use) and used with new values each time: `build`
 * writes it with the placeholders it is handed; the answer makes a use of it for a
 * batch, typed as the statement `build` returns.
 */
export function prepared<V extends Record<string, unknown>, S extends Statement>(
  build: (db: Db, p: Placeholders<V>) => S,
): (db: Db, values: V) => PreparedUse<S> {
  let built: Template | undefined;
  return (db, values) => new PreparedUse<S>(db, (built ??= template(build(buildOnly, standIns<V>()))), values);
}

/** Shapes a preparedSteps() keeps at most (a batch has a handful; past this the cache starts over). */
const MAX_SHAPES = 64;

/**
 * A batch's record of statements (batchByName's Steps), each statement prepared once per
 * shape (`shapeOf` names what changes their text: a list's length, a number written
 * into it; `build` is handed the values for that alone): for a transition whose batch is the same text
 * every time but for its values (a claim).
 */
export function preparedSteps<V extends Record<string, unknown>, T extends Steps>(
  shapeOf: (values: V) => string,
  build: (db: Db, p: Placeholders<V>, values: V) => T,
): (db: Db, values: V) => T {
  const shapes = new Map<string, Shape>();
  return (db, values) => {
    const key = shapeOf(values);
    let shape = shapes.get(key);
    if (!shape) {
      if (shapes.size >= MAX_SHAPES) shapes.clear();
      shape = templatesOf(build(buildOnly, standIns<V>(), values));
      shapes.set(key, shape);
    }
    return usesOf(db, shape, values) as T;
  };
}

/** A record of steps with each statement's template in its place. */
type Shape = Template | undefined | readonly Shape[] | { readonly [name: string]: Shape };

function templatesOf(step: Step): Shape {
  if (step === undefined) return undefined;
  if (Array.isArray(step)) return (step as readonly Statement[]).map((s) => templatesOf(s));
  if (Object.getPrototypeOf(step) !== Object.prototype) return template(step as Statement);
  return Object.fromEntries(Object.entries(step as Steps).map(([name, s]) => [name, templatesOf(s)]));
}

function usesOf(db: Db, shape: Shape, values: Record<string, unknown>): Step {
  if (shape === undefined) return undefined;
  if (Array.isArray(shape)) return shape.map((s) => usesOf(db, s, values) as Statement);
  if (shape instanceof Template) return new PreparedUse<Statement>(db, shape, values);
  return Object.fromEntries<Step>(Object.entries(shape).map(([name, s]) => [name, usesOf(db, s, values)]));
}
