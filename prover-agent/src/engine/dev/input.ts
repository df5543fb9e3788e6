// The job's input file `{"input": ["0x01..", "0x02.."]}` (client-conventions.md, "Input
// encoding") turned into the guest's input stream: one vector per entry.

/** BabyBear, the zkVM's native field. */
export const BABYBEAR_P = 2013265921;

/**
 * One entry of the input stream. `bytes` entries (prefix 01) are vectors of bytes;
 * `field` entries (prefix 02) are vectors of field elements, one hint-stream cell each.
 */
export type InputEntry = { kind: 'bytes'; data: Uint8Array } | { kind: 'field'; data: Uint32Array };

/** The input is malformed; the message says which entry and why. */
export class InputError extends Error {
  override name = 'InputError';
}

/** Hex with or without `0x`, even length; returns null when it is not hex. */
export function parseHex(text: string): Uint8Array | null {
  const digits = text.startsWith('0x') || text.startsWith('0X') ? text.slice(2) : text;
  if (digits.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(digits)) return null;
  return Uint8Array.from(Buffer.from(digits, 'hex'));
}

export function parseInputEntry(text: unknown, index: number): InputEntry {
  const fail = (why: string): never => {
    throw new InputError(`input[${index}]: ${why}`);
  };
  if (typeof text !== 'string') return fail('not a string');
  const bytes = parseHex(text);
  if (!bytes) return fail('not an even-length hex string');
  if (bytes.length === 0) return fail('empty (expected a 01 or 02 prefix)');
  const payload = bytes.subarray(1);
  if (bytes[0] === 0x01) return { kind: 'bytes', data: payload.slice() };
  if (bytes[0] !== 0x02)
    return fail(`unknown prefix 0x${bytes[0].toString(16).padStart(2, '0')} (expected 01 for bytes or 02 for field elements)`);
  if (payload.length % 4 !== 0) return fail(`field-element entry of ${payload.length} bytes is not a whole number of 32-bit words`);
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const data = new Uint32Array(payload.length / 4);
  for (let i = 0; i < data.length; i++) {
    data[i] = view.getUint32(4 * i, true);
    if (data[i] >= BABYBEAR_P) fail(`field element ${i} (${data[i]}) is not below the BabyBear modulus ${BABYBEAR_P}`);
  }
  return { kind: 'field', data };
}

/** Parses the text of an input file. */
export function parseInputJson(text: string): InputEntry[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new InputError(`input file is not JSON: ${(err as Error).message}`);
  }
  const entries = doc !== null && typeof doc === 'object' ? (doc as { input?: unknown }).input : undefined;
  if (!Array.isArray(entries)) throw new InputError('input file must be a JSON object {"input": [...]} with an array of hex strings');
  return entries.map(parseInputEntry);
}

/**
 * A canonical byte string of the whole input (per entry: prefix byte, u32 LE payload
 * length, payload), so that digests of it differ for any change to any entry.
 */
export function canonicalInputBytes(entries: InputEntry[]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const entry of entries) {
    const payload = new Uint8Array(entry.data.buffer, entry.data.byteOffset, entry.data.byteLength);
    const head = new Uint8Array(5);
    head[0] = entry.kind === 'bytes' ? 1 : 2;
    new DataView(head.buffer).setUint32(1, payload.length, true);
    parts.push(head, payload);
  }
  return Buffer.concat(parts);
}
