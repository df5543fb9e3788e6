// The proof input format (client-conventions.md "Input encoding", identical to the
// zkVM's own tool): hex strings, `0x` optional, even length; `01` + bytes, or `02` +
// whole little-endian u32 native field elements.
import { ValidationError } from './errors.ts';

const HEX = /^[0-9a-fA-F]*$/;

/** What the entry checks need to know of one entry (its hex after an optional 0x). */
export interface EntrySummary {
  /** Length of the entry without its `0x`. */
  hexDigits: number;
  /** Whether every character after the optional `0x` is a hex digit. */
  isHex: boolean;
  /** Its first two characters after the optional `0x`. */
  prefix: string;
}

/** Why an entry so summarized is invalid, or null when it is fine. */
export function inputEntryProblem(s: EntrySummary): string | null {
  if (!s.isHex) return 'input entry is not hexadecimal';
  if (s.hexDigits % 2 !== 0) return 'input entry has an odd number of hex digits';
  if (s.hexDigits < 2) return 'input entry is empty: it needs a 01 (bytes) or 02 (field elements) prefix';
  if (s.prefix === '01') return null;
  if (s.prefix === '02') {
    if ((s.hexDigits - 2) % 8 !== 0)
      return 'input entry with prefix 02 must be followed by whole 32-bit little-endian words (hex length after the prefix divisible by 8)';
    return null;
  }
  return `input entry has prefix ${s.prefix}: it must start with 01 (bytes) or 02 (field elements)`;
}

/** Why one input entry is invalid, or null when it is fine. */
export function inputEntryError(entry: unknown): string | null {
  if (typeof entry !== 'string') return 'input entries must be hex strings';
  const hex = entry.startsWith('0x') || entry.startsWith('0X') ? entry.slice(2) : entry;
  return inputEntryProblem({ hexDigits: hex.length, isHex: HEX.test(hex), prefix: hex.slice(0, 2) });
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
