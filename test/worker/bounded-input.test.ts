// Issue 10 items 3 and 5: error lists are capped, bodies are read against a cap
// before parsing, integers and Content-Types are parsed as the reference (FastAPI
// with pydantic v2) parses them.
import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_LISTED_ISSUES } from '../../src/lib/errors.ts';
import { MAX_JSON_BODY_BYTES } from '../../src/lib/limits.ts';
import { parseQueryInt } from '../../src/lib/schemas.ts';
import { api, countRows, json, markReady, registerProgram, seedConfig, seedTenant, type Tenant } from './helpers.ts';

let tenant: Tenant;
let program: string;
beforeAll(async () => {
  tenant = await seedTenant();
  program = await registerProgram(tenant, await seedConfig());
  await markReady(program);
});

/** A request with exactly this Content-Type, or none (a string body would get text/plain). */
const post = (path: string, body: BodyInit, contentType?: string, method = 'POST') =>
  api(tenant, path, {
    method,
    body: typeof body === 'string' ? new TextEncoder().encode(body) : body,
    headers: contentType ? { 'content-type': contentType } : {},
  });

describe('error lists are capped', () => {
  it(`lists the first ${MAX_LISTED_ISSUES} bad input entries and counts the rest`, async () => {
    const bad = 250_000;
    const before = await countRows('proofs');
    const res = await post(`/v1/proofs?program_id=${program}`, JSON.stringify({ input: Array(bad).fill(1) }), 'application/json');
    const text = await res.text();
    expect(res.status).toBe(422);
    expect(text.length).toBeLessThan(20_000);
    const { detail } = JSON.parse(text) as { detail: { loc: unknown[]; msg: string; type: string }[] };
    expect(detail).toHaveLength(MAX_LISTED_ISSUES + 1);
    expect(detail[0]).toEqual({ loc: ['body', 'input', 0], msg: 'Input should be a valid string', type: 'string_type' });
    expect(detail[MAX_LISTED_ISSUES - 1].loc).toEqual(['body', 'input', MAX_LISTED_ISSUES - 1]);
    expect(detail[MAX_LISTED_ISSUES]).toEqual({
      loc: ['body'],
      msg: `${bad - MAX_LISTED_ISSUES} more errors omitted: only the first ${MAX_LISTED_ISSUES} are listed`,
      type: 'too_many_errors',
    });
    expect(await countRows('proofs')).toBe(before);
  });

  it('lists every problem when there are at most the cap', async () => {
    const res = await post(`/v1/executions?program_id=${program}`, JSON.stringify({ input: ['0x01', 'zz', '0x03'] }), 'application/json');
    const { detail } = await json<{ detail: { loc: unknown[]; type: string }[] }>(res, 422);
    expect(detail.map((d) => d.loc)).toEqual([
      ['body', 'input', 1],
      ['body', 'input', 2],
    ]);
  });
});

describe('bodies are read against a cap before they are parsed', () => {
  const big = JSON.stringify('x'.repeat(MAX_JSON_BODY_BYTES + 1));
  it('POST /v1/projects: 413 past the small-body cap, declared or streamed', async () => {
    const res = await post('/v1/projects', big, 'application/json');
    expect(res.status).toBe(413);
    expect((await res.json<{ detail: string }>()).detail).toBe(`Request body too large: the limit is ${MAX_JSON_BODY_BYTES} bytes`);
    // No Content-Length: a stream, cut off at the cap.
    const chunks = [new TextEncoder().encode(big.slice(0, 40_000)), new TextEncoder().encode(big.slice(40_000))];
    const stream = new ReadableStream<Uint8Array>({ pull: (c) => (chunks.length ? c.enqueue(chunks.shift()) : c.close()) });
    expect((await post('/v1/projects', stream, 'application/json')).status).toBe(413);
    // Just under the cap is read, and then refused for what it says.
    const res2 = await post('/v1/projects', JSON.stringify('x'.repeat(MAX_JSON_BODY_BYTES - 10)), 'application/json');
    expect((await json<{ detail: { type: string }[] }>(res2, 422)).detail[0].type).toBe('string_too_long');
  });

  it('PUT /v1/programs/{id}: 413 past the cap, before the body is parsed', async () => {
    const res = await post(`/v1/programs/${program}`, JSON.stringify({ name: 'x'.repeat(MAX_JSON_BODY_BYTES) }), 'application/json', 'PUT');
    expect(res.status).toBe(413);
    const ok = await post(`/v1/programs/${program}`, JSON.stringify({ name: 'renamed' }), 'application/json', 'PUT');
    expect((await json<{ name: string }>(ok, 200)).name).toBe('renamed');
  });
});

describe('Content-Type as FastAPI reads it, but for a type that is not JSON (415)', () => {
  // The reference answers 422 "Input should be a valid dictionary" with no word of the
  // Content-Type (issue 31 finding 6): this service names the type it reads.
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'json', 'application/jsonx', 'text/json']) {
    it(`refuses a JSON body sent as ${type}, naming the type it reads`, async () => {
      const input = JSON.stringify({ input: ['0x0101'] });
      const unsupported = (reads: string) => ({
        detail: `Unsupported Content-Type ${JSON.stringify(type)}: send this body as ${reads} (with curl: -H 'Content-Type: application/json')`,
      });
      const proof = await post(`/v1/proofs?program_id=${program}`, input, type);
      expect(await json(proof, 415)).toEqual(unsupported('application/json or multipart/form-data'));
      expect(proof.headers.get('Accept-Post')).toBe('application/json, multipart/form-data');
      expect(await json(await post(`/v1/executions?program_id=${program}`, input, type), 415)).toEqual(unsupported('application/json'));
      expect(await json(await post('/v1/projects', '"p"', type), 415)).toEqual(unsupported('application/json'));
      const put = await post(`/v1/programs/${program}`, '{"name": "n"}', type, 'PUT');
      expect(await json(put, 415)).toEqual(unsupported('application/json'));
      expect(put.headers.get('Accept-Post')).toBeNull();
    });
  }

  for (const type of [undefined, 'application/json', 'Application/JSON; charset=utf-8', 'application/vnd.api+json']) {
    it(`reads JSON sent ${type ? `as ${type}` : 'with no Content-Type'}`, async () => {
      expect((await post('/v1/projects', '"named"', type)).status).toBe(201);
      expect((await post(`/v1/proofs?program_id=${program}`, JSON.stringify({ input: ['0x0101'] }), type)).status).toBe(200);
      const res = await post(`/v1/programs/${program}`, '{"name": "again"}', type, 'PUT');
      expect((await json<{ name: string }>(res, 200)).name).toBe('again');
    });
  }

  it('an empty body is a missing body', async () => {
    const missing = { detail: [{ loc: ['body'], msg: 'Field required', type: 'missing' }] };
    expect(await json(await post('/v1/projects', '', 'application/json'), 422)).toEqual(missing);
    expect(await json(await post(`/v1/proofs?program_id=${program}`, '', 'application/json'), 422)).toEqual(missing);
    expect(await json(await post(`/v1/programs/${program}`, '', 'application/json', 'PUT'), 422)).toEqual(missing);
  });
});

describe('integers as pydantic v2 parses query strings', () => {
  // From pydantic-core's str_as_int / clean_int_str (src/input/shared.rs).
  const accepted: [string, number][] = [
    ['5', 5],
    ['+5', 5],
    [' 5', 5],
    ['5 ', 5],
    ['\t5\n', 5],
    ['\u00a05', 5],
    ['5.0', 5],
    ['5.00', 5],
    ['007', 7],
    ['0_7', 7],
    ['1_000', 1000],
    ['-5', -5],
    ['-0', 0],
    ['0.0', 0],
    ['00', 0],
    ['1_0.0', 10],
    [' +1_0 ', 10],
  ];
  const refused = [
    '0x10',
    '1e3',
    '5.5',
    '5.',
    '.0',
    '',
    ' ',
    '+',
    '-',
    '+-5',
    '--5',
    '-+5',
    '_1',
    '1_',
    '1__0',
    '5.0_0',
    '0b1',
    '١',
    '5\ufeff',
    'five',
    '1,000',
    '5 5',
  ];
  it('parseQueryInt matches pydantic on each case', () => {
    for (const [text, value] of accepted) expect(parseQueryInt(text), JSON.stringify(text)).toBe(BigInt(value));
    for (const text of refused) expect(parseQueryInt(text), JSON.stringify(text)).toBeNull();
  });

  const intParsing = (param: string) => ({
    loc: ['query', param],
    msg: 'Input should be a valid integer, unable to parse string as an integer',
    type: 'int_parsing',
  });
  for (const bad of ['0x10', '1e3', '5.5', 'abc', '']) {
    it(`page, page_size, num_gpus, priority and default_num_gpus refuse ${JSON.stringify(bad)} with int_parsing`, async () => {
      const v = encodeURIComponent(bad);
      expect((await json(await api(tenant, `/v1/projects?page=${v}`), 422)).detail).toEqual([intParsing('page')]);
      expect((await json(await api(tenant, `/v1/proofs?program_id=${program}&page_size=${v}`), 422)).detail).toEqual([
        intParsing('page_size'),
      ]);
      const submit = (q: string) => post(`/v1/proofs?program_id=${program}&${q}`, JSON.stringify({ input: [] }), 'application/json');
      expect((await json(await submit(`num_gpus=${v}`), 422)).detail).toEqual([intParsing('num_gpus')]);
      expect((await json(await submit(`priority=${v}`), 422)).detail).toEqual([intParsing('priority')]);
      const register = await api(tenant, `/v1/programs?config_id=cfg_01JD0000000000000000000000&default_num_gpus=${v}`, {
        method: 'POST',
        body: new FormData(),
      });
      expect((await json(register, 422)).detail).toEqual([intParsing('default_num_gpus')]);
    });
  }

  it('accepts what pydantic accepts: +5, " 5 ", 5.0, 1_0', async () => {
    for (const good of ['+5', ' 5 ', '5.0', '0_5']) {
      const res = await api(tenant, `/v1/projects?page_size=${encodeURIComponent(good)}`);
      expect((await json<{ pagination: { page_size: number } }>(res, 200)).pagination.page_size).toBe(5);
    }
    const res = await post(
      `/v1/proofs?program_id=${program}&priority=1_0&num_gpus=%2B2`,
      JSON.stringify({ input: [] }),
      'application/json',
    );
    const { id } = await json<{ id: string }>(res, 200);
    const proof = await json<{ priority: number; num_gpus: number }>(await api(tenant, `/v1/proofs/${id}`), 200);
    expect([proof.priority, proof.num_gpus]).toEqual([10, 2]);
  });

  it('bounds still apply after parsing', async () => {
    expect((await json(await api(tenant, '/v1/projects?page_size=1_000'), 422)).detail[0]).toMatchObject({
      loc: ['query', 'page_size'],
      type: 'less_than_equal',
    });
    expect((await json(await api(tenant, '/v1/projects?page=99999999999999999999'), 422)).detail[0]).toMatchObject({
      loc: ['query', 'page'],
      type: 'less_than_equal',
    });
  });
});
