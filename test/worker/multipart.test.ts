// Property: the multipart parser's answer depends on the bytes only, never on how
// they were split into chunks (TCP segments). Every body below (the forms the other
// test files send, serialized by workerd exactly as a client's would be, plus
// hand-written malformed ones) is parsed whole, then split at seeded random points
// and byte by byte, and every outcome (parts, their bytes, or the error) must match.
import { describe, expect, it } from 'vitest';
import { DelimiterSearch, indexOfBytes } from '../../src/lib/bytes.ts';
import { ApiError } from '../../src/lib/errors.ts';
import { multipartBoundary, parseMultipart, type MultipartLimits, type PartInfo } from '../../src/lib/multipart.ts';
import { guest, programForm, seededRandom, VMEXE } from './helpers.ts';

interface Case {
  name: string;
  bytes: Uint8Array;
  boundary: string;
  limits: MultipartLimits;
}

const enc = new TextEncoder();

/** The bytes and boundary workerd produces for a FormData body. */
async function serialize(form: FormData): Promise<{ bytes: Uint8Array; boundary: string }> {
  const req = new Request('https://x.test/', { method: 'POST', body: form });
  return { bytes: new Uint8Array(await req.arrayBuffer()), boundary: multipartBoundary(req.headers.get('content-type') ?? undefined)! };
}

const B = 'XyZboundary';
const raw = (text: string) => enc.encode(text.replaceAll('\n', '\r\n'));
const disposition = (name: string) => `Content-Disposition: form-data; name="${name}"`;

async function corpus(): Promise<Case[]> {
  const roomy: MultipartLimits = { maxBytes: 4 * 1024 * 1024, maxParts: 8 };
  const cases: Case[] = [];
  const add = async (name: string, form: FormData, limits = roomy) => cases.push({ name, ...(await serialize(form)), limits });
  // The forms the route tests send.
  await add('program registration', programForm(guest('hello.elf'), VMEXE));
  await add('program registration with project_name', programForm(guest('hello.elf'), VMEXE, { project_name: 'p' }));
  await add('registration missing vmexe', programForm(guest('hello.elf'), null));
  const proof = new FormData();
  proof.append('input', JSON.stringify({ input: ['0x0148656c6c6f'] }));
  proof.append('child_proofs', new File([JSON.stringify({ version: 'v1.4', proof: 'ab', user_public_values: '' })], 'child.json'));
  proof.append('child_proofs', new File([new Uint8Array(300).map((_, i) => (i * 37) & 0xff)], 'child.bin'));
  await add('proof submission with child proofs', proof);
  const verify = new FormData();
  verify.append('proof', new File([`--${'x'.repeat(40)}\r\n\r\n{"proof_data": {}}`], 'proof.json'));
  await add('verify upload (data that looks like a delimiter)', verify);
  await add('registration over maxBytes', programForm(guest('hello.elf'), VMEXE), { maxBytes: 9000, maxParts: 8 });
  await add('too many parts', programForm(guest('hello.elf'), VMEXE, { a: '1', b: '2', c: '3' }), { maxBytes: 1 << 20, maxParts: 3 });

  const hand = (name: string, text: string | Uint8Array, limits: MultipartLimits = roomy) =>
    cases.push({ name, bytes: typeof text === 'string' ? raw(text) : text, boundary: B, limits });
  hand(
    'preamble, padding and epilogue',
    `preamble\n--${B}  \n${disposition('a')}\n\nA\n--${B}\n${disposition('b')}\n\nB\n--${B}--\nepilogue`,
  );
  hand('a part with no headers', `--${B}\n\nno headers here\n--${B}--\n`);
  hand('a part with no headers, body has a blank line later', `--${B}\n\nline\n\n${disposition('x')}\n\nbody\n--${B}--\n`);
  hand('headers without a name', `--${B}\nContent-Disposition: form-data\n\nx\n--${B}--\n`);
  hand('headers that are not form-data', `--${B}\nContent-Type: text/plain\n\nx\n--${B}--\n`);
  hand('no CRLF after a boundary', `--${B}junk\n${disposition('a')}\n\nx\n--${B}--\n`);
  hand('the body ends before the closing boundary', `--${B}\n${disposition('a')}\n\nunfinished`);
  hand('empty body', '');
  hand('only a closing boundary', `--${B}--\n`);
  const header = (n: number) => `X-Pad: ${'p'.repeat(n)}\n${disposition('a')}`;
  // The header block's length is what the 16 KiB limit judges: just under, at and over it.
  for (const len of [16 * 1024 - 1, 16 * 1024, 16 * 1024 + 1, 16 * 1024 + 3, 40 * 1024]) {
    const pad = len - (header(0).length + 1); // +1: the CR each LF becomes
    hand(`a ${len}-byte header block`, `--${B}\n${header(pad)}\n\nx\n--${B}--\n`);
  }
  hand('malformed within maxBytes, longer than it', `--${B}\n\n${'z'.repeat(500)}`, { maxBytes: 100 });
  hand('malformed after maxBytes', `--${B}\n${disposition('a')}\n\n${'z'.repeat(500)}\n--${B}\n\n`, { maxBytes: 100 });
  hand(
    'binary junk',
    new Uint8Array(2048).map((_, i) => (i * 131 + 7) & 0xff),
  );
  return cases;
}

type Outcome = { parts: { info: PartInfo; bytes: number[] }[] } | { error: string };

/** Parses `bytes` delivered in the given chunks; what the caller would see. */
async function outcome(c: Case, chunks: Uint8Array[]): Promise<Outcome> {
  const stream = new ReadableStream<Uint8Array>({
    pull(ctl) {
      const next = chunks.shift();
      if (next) ctl.enqueue(next);
      else ctl.close();
    },
  });
  const parts: { info: PartInfo; bytes: number[] }[] = [];
  try {
    await parseMultipart(stream, c.boundary, c.limits, (info) => {
      const part = { info, bytes: [] as number[] };
      parts.push(part);
      return {
        write: (chunk) => {
          for (const b of chunk) part.bytes.push(b);
        },
        end() {},
      };
    });
    return { parts };
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    return { error: `${e.status} ${e.message}` };
  }
}

function splitAt(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts)].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let from = 0;
  for (const p of [...points, bytes.length]) {
    if (p > from) out.push(bytes.slice(from, p));
    from = Math.max(from, p);
  }
  return out;
}

describe('multipart parsing does not depend on chunking', async () => {
  const cases = await corpus();
  it('the corpus covers accepted bodies and each kind of refusal', async () => {
    const whole = await Promise.all(cases.map((c) => outcome(c, [c.bytes])));
    const errors = whole.map((o) => ('error' in o ? o.error.replace(/:.*/, '') : 'ok'));
    expect(errors).toContain('ok');
    expect(errors).toContain('400 Malformed multipart body');
    expect(errors).toContain('413 Request body too large');
    expect(errors).toContain('413 Too many multipart parts');
    expect(whole[cases.findIndex((c) => c.name === 'a part with no headers')]).toEqual({
      error: '400 Malformed multipart body: part without Content-Disposition',
    });
    expect(whole[cases.findIndex((c) => c.name === `a ${16 * 1024}-byte header block`)]).toHaveProperty('parts');
    expect(whole[cases.findIndex((c) => c.name === `a ${16 * 1024 + 1}-byte header block`)]).toEqual({
      error: '400 Malformed multipart body: part headers too long',
    });
  });

  for (const c of cases) {
    it(`${c.name}: random splits and byte-by-byte give the whole body's answer`, async () => {
      const expected = await outcome(c, [c.bytes]);
      const random = seededRandom(c.bytes.length + c.name.length);
      for (let trial = 0; trial < 25; trial++) {
        const cuts = Array.from({ length: 1 + Math.floor(random() * 40) }, () => Math.floor(random() * c.bytes.length));
        expect(await outcome(c, splitAt(c.bytes, cuts)), `cuts ${cuts.join(',')}`).toEqual(expected);
      }
      // Every single split point, and one byte at a time.
      for (let at = 1; at < Math.min(c.bytes.length, 600); at++)
        expect(await outcome(c, splitAt(c.bytes, [at])), `split at ${at}`).toEqual(expected);
      const bytewise = Array.from({ length: c.bytes.length }, (_, i) => i);
      expect(await outcome(c, splitAt(c.bytes, bytewise))).toEqual(expected);
    });
  }
});

describe("the delimiter's search (DelimiterSearch) finds what a byte-by-byte search finds", () => {
  it('at every start, in random bodies of the bytes a delimiter is made of', () => {
    const random = seededRandom(2046);
    const pick = (alphabet: string, n: number) =>
      Array.from({ length: n }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
    for (let trial = 0; trial < 400; trial++) {
      // CR once, first: as in every delimiter (CRLF, "--", a boundary of no CR).
      const needle = enc.encode('\r' + pick('\n-ab', Math.floor(random() * 8)));
      const hay = enc.encode(pick('\r\n-ab', Math.floor(random() * 120)));
      const search = new DelimiterSearch(needle);
      for (let from = 0; from <= hay.length; from++)
        expect(search.indexIn(hay, from), `${JSON.stringify(new TextDecoder().decode(needle))} from ${from}`).toBe(
          indexOfBytes(hay, needle, from),
        );
    }
  });

  it('refuses a needle that holds its first byte twice (a compare could then run over another)', () => {
    expect(() => new DelimiterSearch(enc.encode('\r\n\r'))).toThrow(/first byte once/);
    expect(() => new DelimiterSearch(new Uint8Array(0))).toThrow(/first byte once/);
  });

  it('a boundary with a line break is a malformed body (400), not a search it cannot make', async () => {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(raw('--a\rb\nContent-Disposition: form-data; name="x"\n\n1\n--a\rb--\n'));
        controller.close();
      },
    });
    const refusal = await parseMultipart(body, 'a\rb', { maxBytes: 1024 }, () => ({ write() {}, end() {} })).catch((err: unknown) => err);
    expect(refusal).toBeInstanceOf(ApiError);
    expect((refusal as ApiError).status).toBe(400);
    expect((refusal as ApiError).message).toMatch(/boundary holds a line break/);
  });
});
