// The caller's files a job carries to an agent (its proof input, deferred child
// proofs, a proof to verify): the caps the service holds them to and the shallow
// checks both sides make, declared once for the Worker (src/lib/limits.ts re-exports
// the caps; src/lib/input.ts and src/features/proofs/format.ts check with these) and
// for the agent's engines (engine/openvm/job-files.ts, engine/dev/input.ts), so that a
// file the service accepted is never one an agent fails on. Every check here is a
// loop, linear in the text: never a regex that repeats a group per character, which
// V8 backtracks through on its stack ("Maximum call stack size exceeded" at a few
// million hex digits, issue 28).

/** Caps on deferred child proofs (interface 8 leaves them to us; README "Limits"). */
export const MAX_CHILD_PROOFS = 16;
export const MAX_CHILD_PROOF_BYTES = 16 * 1024 * 1024;
/** Largest `input` JSON accepted, whether sent as the body or as a form field. */
export const MAX_INPUT_BYTES = 32 * 1024 * 1024;
/** Largest proof file a verification takes (POST /v1/verify/*): a child proof's cap. */
export const MAX_VERIFY_PROOF_BYTES = MAX_CHILD_PROOF_BYTES;

const isHexCode = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

/** Whether every character of `text` from `from` on is a hex digit (none is fine). */
export function allHexDigits(text: string, from = 0): boolean {
  for (let i = from; i < text.length; i++) if (!isHexCode(text.charCodeAt(i))) return false;
  return true;
}

/** The length of an input entry's `0x` (or `0X`) prefix: 2, or 0 when it has none. */
export const hexPrefixLength = (text: string): number => (text.startsWith('0x') || text.startsWith('0X') ? 2 : 0);

/**
 * Whether `text` is hex bytes as proof files carry them: an optional `0x` (lower case,
 * as the zkVM's serializers write and its tool strips), then an even number of hex digits.
 */
export function isHex(text: string): boolean {
  const from = text.startsWith('0x') ? 2 : 0;
  return (text.length - from) % 2 === 0 && allHexDigits(text, from);
}

/** What the entry checks need to know of one input entry (its hex after an optional 0x). */
export interface EntrySummary {
  /** Length of the entry without its `0x`. */
  hexDigits: number;
  /** Whether every character after the optional `0x` is a hex digit. */
  isHex: boolean;
  /** Its first two characters after the optional `0x`. */
  prefix: string;
}

/**
 * Why an input entry so summarized is invalid, or null when it is fine
 * (client-conventions.md "Input encoding", the zkVM tool's own rules): hex, `0x`
 * optional, even length; `01` + bytes, or `02` + whole little-endian u32 words.
 */
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
  const from = hexPrefixLength(entry);
  return inputEntryProblem({ hexDigits: entry.length - from, isHex: allHexDigits(entry, from), prefix: entry.slice(from, from + 2) });
}
