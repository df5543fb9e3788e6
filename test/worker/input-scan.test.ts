// The proof input scan (src/lib/input-scan.ts) answers exactly what parsing the
// document with JSON.parse and checking its entries answers, on documents built to
// cover the grammar and its faults: a seeded property test against that reference.
// Fed in chunks, however split, it answers what it answers of the whole document.
import { describe, expect, it } from 'vitest';
import { ValidationError, type ValidationIssue } from '../../src/lib/errors.ts';
import { inputEntryError } from 'prover-agent/protocol';
import { checkProofInputBytes, ProofInputScan } from '../../src/lib/input-scan.ts';

type Outcome = { ok: true } | { ok: false; issues: Pick<ValidationIssue, 'loc' | 'type' | 'msg'>[] };

/** What the scan answers. */
function scan(text: string): Outcome {
  try {
    checkProofInputBytes(new TextEncoder().encode(text));
    return { ok: true };
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    return { ok: false, issues: e.issues.map(({ loc, type, msg }) => ({ loc, type, msg })) };
  }
}

/** What the scan answers of `bytes` pushed in the given pieces (lengths, the last taking the rest). */
function scanInPieces(bytes: Uint8Array, lengths: number[]): Outcome {
  const s = new ProofInputScan();
  let at = 0;
  for (const n of lengths) {
    s.push(bytes.subarray(at, at + n));
    at += n;
  }
  s.push(bytes.subarray(at));
  const refusal = s.end();
  return refusal ? { ok: false, issues: refusal.issues.map(({ loc, type, msg }) => ({ loc, type, msg })) } : { ok: true };
}

/** The reference: JSON.parse, then the checks the API has always made of the parsed body. */
function reference(text: string): Outcome | 'json_invalid' {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return 'json_invalid';
  }
  const fail = (issues: Pick<ValidationIssue, 'loc' | 'type' | 'msg'>[]): Outcome => ({ ok: false, issues });
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return fail([{ loc: ['body'], msg: 'Input should be a valid dictionary', type: 'dict_type' }]);
  const input = (body as { input?: unknown }).input;
  if (input === undefined) return fail([{ loc: ['body', 'input'], msg: 'Field required', type: 'missing' }]);
  if (!Array.isArray(input)) return fail([{ loc: ['body', 'input'], msg: 'Input should be a valid list', type: 'list_type' }]);
  const issues = input.flatMap((entry: unknown, i) => {
    const err = inputEntryError(entry);
    if (!err) return [];
    return typeof entry === 'string'
      ? [{ loc: ['body', 'input', i], msg: `Value error, ${err}`, type: 'value_error' }]
      : [{ loc: ['body', 'input', i], msg: 'Input should be a valid string', type: 'string_type' }];
  });
  return issues.length ? fail(issues) : { ok: true };
}

/** A small seeded generator (mulberry32), so a failure names a reproducible case. */
function rng(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function documents(seed: number, count: number): string[] {
  const r = rng(seed);
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)];
  const hex = (n: number) => Array.from({ length: n }, () => pick([...'0123456789abcdefABCDEF'])).join('');
  const entry = (): unknown =>
    pick<() => unknown>([
      () => '0x01' + hex(2 * Math.floor(r() * 6)),
      () => '01' + hex(2 * Math.floor(r() * 6)),
      () => '0X02' + hex(8 * Math.floor(r() * 3)),
      () => '02' + hex(1 + Math.floor(r() * 12)),
      () => pick(['', '0x', '0', '0x0', '03ff', '0xzz', '01g0', 'hello', 'é01', '0x01\u00e9']),
      () => pick([1, -2.5, 1e3, true, false, null, [], ['01'], {}, { a: '01' }]),
    ])();
  // Entries spelled with escapes (\u0030 is '0', \/ and \\ are not hex) the parser must decode.
  const escaped = (s: string) =>
    JSON.stringify(s).replace(/[0-9a-fx]/gi, (c) => (r() < 0.3 ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}` : c));
  const value = (depth: number): string =>
    depth > 2 || r() < 0.5
      ? JSON.stringify(pick([1, 'x', null, true, 0.5, '\\n']))
      : r() < 0.5
        ? `[${Array.from({ length: Math.floor(r() * 3) }, () => value(depth + 1)).join(',')}]`
        : `{${Array.from({ length: Math.floor(r() * 3) }, (_, i) => `"k${i}":${value(depth + 1)}`).join(',')}}`;
  const inputList = () =>
    `[${Array.from({ length: Math.floor(r() * 6) }, () => (r() < 0.3 ? escaped(String(entry())) : JSON.stringify(entry()))).join(pick([',', ' , ', ',\n']))}]`;
  const out: string[] = [];
  for (let k = 0; k < count; k++) {
    const members: string[] = [];
    if (r() < 0.3) members.push(`"other":${value(0)}`);
    if (r() < 0.85) members.push(`${pick(['"input"', '"\\u0069nput"', '"inputs"', '"Input"'])}:${r() < 0.85 ? inputList() : value(0)}`);
    if (r() < 0.15) members.push(`"input":${inputList()}`); // a repeated key: the last counts
    let doc = pick([`{${members.join(',')}}`, `{ ${members.join(' , ')} }`, `\n{${members.join(',\n')}}\n`]);
    if (r() < 0.08) doc = pick(['[]', '"input"', '12', 'null', `[{${members.join(',')}}]`]);
    // Faults: cut short, a stray byte, a trailing comma, trailing garbage.
    const f = r();
    if (f < 0.08) doc = doc.slice(0, Math.floor(r() * doc.length));
    else if (f < 0.14) {
      const at = Math.floor(r() * doc.length);
      doc = doc.slice(0, at) + pick(['}', ']', ',', ':', '"', 'x', '\\', '\u0001']) + doc.slice(at);
    } else if (f < 0.17) doc = doc.replace(/\]$|\]\s*}/, (m) => ',' + m);
    else if (f < 0.2) doc += pick([' x', '{}', ',']);
    out.push(doc);
  }
  return out;
}

describe('the proof input scan', () => {
  it('answers what JSON.parse and the entry checks answer, on 3000 seeded documents', () => {
    let faults = 0;
    for (const doc of documents(20261123, 3000)) {
      const expected = reference(doc);
      const got = scan(doc);
      if (expected === 'json_invalid') {
        faults++;
        expect(got, doc).toMatchObject({ ok: false, issues: [{ type: 'json_invalid', loc: ['body', expect.any(Number)] }] });
      } else {
        expect(got, doc).toEqual(expected);
      }
    }
    // The generator does reach both sides.
    expect(faults).toBeGreaterThan(100);
    expect(faults).toBeLessThan(2900);
  });

  it('answers the same of a document pushed in pieces, split anywhere (escapes, literals, numbers, keys cut in two)', () => {
    const r = rng(7);
    for (const doc of documents(20261125, 1500)) {
      const bytes = new TextEncoder().encode(doc);
      const whole = scan(doc);
      expect(scanInPieces(bytes, Array(bytes.length).fill(1)), doc).toEqual(whole);
      const random: number[] = [];
      for (let n = 0; n < bytes.length; n += random.at(-1)!) random.push(Math.floor(r() * 7));
      expect(scanInPieces(bytes, random), doc).toEqual(whole);
    }
    // The faults at a chunk's edge: reported where they are, not where the chunk ends.
    const edge = new TextEncoder().encode('{"input": ["01", "\\u00zz"]}');
    expect(scanInPieces(edge, [19, 2, 3])).toMatchObject({
      ok: false,
      issues: [{ loc: ['body', 18], type: 'json_invalid', msg: expect.stringMatching(/Bad Unicode escape/) }],
    });
  });

  it('reads millions of entries without building them, and reports the first 100 plus a count', () => {
    const entries = 2_000_000;
    const doc = '{"input":[' + Array.from({ length: entries }, (_, i) => (i % 2 ? '"0x0101"' : '"zz"')).join(',') + ']}';
    const got = scan(doc);
    expect(got.ok).toBe(false);
    const issues = (got as { issues: ValidationIssue[] }).issues;
    expect(issues).toHaveLength(101);
    expect(issues[0]).toMatchObject({ loc: ['body', 'input', 0], type: 'value_error' });
    expect(issues[100]).toMatchObject({ type: 'too_many_errors', msg: expect.stringMatching(/^999900 more errors omitted/) });
  });

  it('reports malformed JSON of a form field at the field, and its entries at the body', () => {
    const malformed = () => checkProofInputBytes(new TextEncoder().encode('{"input": ["01"'), ['body', 'input']);
    expect(malformed).toThrow(ValidationError);
    try {
      malformed();
    } catch (e) {
      expect((e as ValidationError).issues[0]).toMatchObject({ loc: ['body', 'input', 15], type: 'json_invalid' });
    }
  });
});
