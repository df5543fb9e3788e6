// The proof input format (client-conventions.md "Input encoding", identical to the
// zkVM's own tool): hex strings, `0x` optional, even length; `01` + bytes, or `02` +
// whole little-endian u32 native field elements.
import { IssueList, ValidationError } from './errors.ts';

const HEX = /^[0-9a-fA-F]*$/;

/** Why one input entry is invalid, or null when it is fine. */
export function inputEntryError(entry: unknown): string | null {
  if (typeof entry !== 'string') return 'input entries must be hex strings';
  const hex = entry.startsWith('0x') || entry.startsWith('0X') ? entry.slice(2) : entry;
  if (!HEX.test(hex)) return 'input entry is not hexadecimal';
  if (hex.length % 2 !== 0) return 'input entry has an odd number of hex digits';
  if (hex.length < 2) return 'input entry is empty: it needs a 01 (bytes) or 02 (field elements) prefix';
  const prefix = hex.slice(0, 2);
  if (prefix === '01') return null;
  if (prefix === '02') {
    if ((hex.length - 2) % 8 !== 0)
      return 'input entry with prefix 02 must be followed by whole 32-bit little-endian words (hex length after the prefix divisible by 8)';
    return null;
  }
  return `input entry has prefix ${prefix}: it must start with 01 (bytes) or 02 (field elements)`;
}

/**
 * Validates `{"input": [...]}` and returns the normalized body to store. Bad entries
 * are reported each at `["body", "input", i]`, the first MAX_LISTED_ISSUES of them.
 */
export function parseProofInput(body: unknown): { input: string[] } {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ValidationError([{ loc: ['body'], msg: 'Input should be a valid dictionary', type: 'dict_type' }]);
  const input = (body as { input?: unknown }).input;
  if (input === undefined) throw new ValidationError([{ loc: ['body', 'input'], msg: 'Field required', type: 'missing' }]);
  if (!Array.isArray(input))
    throw new ValidationError([{ loc: ['body', 'input'], msg: 'Input should be a valid list', type: 'list_type' }]);
  const issues = new IssueList();
  for (let i = 0; i < input.length; i++) {
    const entry: unknown = input[i];
    const err = inputEntryError(entry);
    if (err)
      issues.add(() => ({
        loc: ['body', 'input', i],
        msg: typeof entry === 'string' ? `Value error, ${err}` : 'Input should be a valid string',
        type: typeof entry === 'string' ? 'value_error' : 'string_type',
      }));
  }
  if (issues.size) throw new ValidationError(issues);
  return { input: input as string[] };
}

/** Parses a JSON text body; malformed JSON is a 422 `json_invalid` at the error position. */
export function parseJsonText(text: string, loc: (string | number)[] = ['body']): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    const pos = /position (\d+)/.exec(String(e))?.[1];
    throw new ValidationError([
      { loc: [...loc, pos ? Number(pos) : 0], msg: `JSON decode error: ${(e as Error).message}`, type: 'json_invalid' },
    ]);
  }
}
