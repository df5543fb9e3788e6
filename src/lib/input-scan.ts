// The proof input document `{"input": [hex, ...]}`, checked in one pass over its
// bytes without building it. JSON.parse of a cap-sized input of millions of tiny
// entries costs hundreds of MB (one JS string per entry), past a Worker's 128 MB;
// this scan holds the body's bytes (already capped) plus one bit per nesting level.
//
// It answers what JSON.parse followed by the entry checks answered, in the same
// order: malformed JSON (json_invalid, at its byte offset), then a body that is not
// an object (dict_type), no `input` (missing), an `input` that is not a list
// (list_type), then every bad entry at its index (string_type, value_error). As with
// JSON.parse, a repeated key's last value counts. Escapes in strings are decoded.
import { IssueList, ValidationError } from './errors.ts';
import { inputEntryProblem, type EntrySummary } from './input.ts';

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);
/** `\x` escapes other than `\u`: the escaped byte → the code unit it stands for. */
const SIMPLE_ESCAPES = new Map([
  [0x22, 0x22],
  [0x5c, 0x5c],
  [0x2f, 0x2f],
  [0x62, 8],
  [0x66, 12],
  [0x6e, 10],
  [0x72, 13],
  [0x74, 9],
]);
const isDigit = (b: number) => b >= 0x30 && b <= 0x39;
const isHexCode = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

class SyntaxFault extends Error {
  constructor(
    message: string,
    readonly at: number,
  ) {
    super(message);
  }
}

/** A string's code units as they stream by: what the entry checks need, in O(1). */
class EntryTracker {
  length = 0;
  /** The first four code units (enough for an optional 0x and the 01/02 prefix). */
  head: number[] = [];
  /** Whether every unit from index 2 on is a hex digit. */
  hexFrom2 = true;
  push(c: number) {
    if (this.head.length < 4) this.head.push(c);
    if (this.length >= 2 && !isHexCode(c)) this.hexFrom2 = false;
    this.length++;
  }
  summary(): EntrySummary {
    const [c0, c1] = this.head;
    const has0x = c0 === 0x30 && (c1 === 0x78 || c1 === 0x58);
    const prefixUnits = has0x ? this.head.slice(2, 4) : this.head.slice(0, 2);
    return {
      hexDigits: has0x ? this.length - 2 : this.length,
      isHex: this.hexFrom2 && (has0x || ((c0 === undefined || isHexCode(c0)) && (c1 === undefined || isHexCode(c1)))),
      prefix: String.fromCharCode(...prefixUnits),
    };
  }
}

/**
 * Checks the input document in `bytes` (UTF-8 checked by the caller); throws the
 * 422 a bad one gets. Memory: one bit per nesting level beyond the bytes themselves.
 * `syntaxLoc` is where malformed JSON is reported (`["body", "input"]` when the
 * document came as a multipart form field); its fields are always `["body", …]`.
 */
export function checkProofInputBytes(bytes: Uint8Array, syntaxLoc: (string | number)[] = ['body']): void {
  const loc = ['body'];
  const n = bytes.length;
  // Container kinds per depth, one bit each (1 = object); depth can never exceed n.
  const kinds = new Uint8Array((n >> 3) + 1);
  let depth = 0;
  const setKind = (d: number, object: boolean) => {
    if (object) kinds[d >> 3]! |= 1 << (d & 7);
    else kinds[d >> 3]! &= ~(1 << (d & 7));
  };
  const isObject = (d: number) => (kinds[d >> 3]! & (1 << (d & 7))) !== 0;

  let topKind: 'object' | 'other' | null = null;
  // The last `input` of the top-level object: its kind, and its entries' problems.
  let inputKind: 'list' | 'other' | null = null;
  let issues = new IssueList();
  let entryIndex = 0;
  // Whether the value about to be read is the top-level object's `input`.
  let valueIsInput = false;

  let i = 0;
  const fault = (msg: string): never => {
    throw new SyntaxFault(msg, i);
  };
  const skipWs = () => {
    while (i < n && WS.has(bytes[i]!)) i++;
  };

  /** Reads a string at bytes[i] === '"'; feeds its code units to `onUnit`. */
  const readString = (onUnit: ((c: number) => void) | null) => {
    i++; // opening quote
    for (;;) {
      if (i >= n) fault('Unterminated string');
      const b = bytes[i]!;
      if (b === 0x22) {
        i++;
        return;
      }
      if (b < 0x20) fault('Bad control character in string literal');
      if (b === 0x5c) {
        const e = bytes[i + 1];
        if (e === undefined) fault('Unterminated string');
        let unit: number;
        if (e === 0x75) {
          let v = 0;
          for (let k = 2; k < 6; k++) {
            const h = bytes[i + k];
            if (h === undefined || !isHexCode(h)) fault('Bad Unicode escape in JSON');
            v = v * 16 + parseInt(String.fromCharCode(h!), 16);
          }
          unit = v;
          i += 6;
        } else {
          const decoded = SIMPLE_ESCAPES.get(e!);
          if (decoded === undefined) fault('Bad escaped character in JSON');
          unit = decoded!;
          i += 2;
        }
        onUnit?.(unit);
        continue;
      }
      // A multi-byte UTF-8 sequence is never a hex digit: one unit stands for it.
      onUnit?.(b);
      i++;
    }
  };

  const readNumber = () => {
    const start = i;
    if (bytes[i] === 0x2d) i++;
    if (bytes[i] === 0x30) i++;
    else if (bytes[i] !== undefined && isDigit(bytes[i]!)) while (i < n && isDigit(bytes[i]!)) i++;
    else fault('No number after minus sign in JSON');
    if (bytes[i] === 0x2e) {
      i++;
      if (!(i < n && isDigit(bytes[i]!))) fault('Unterminated fractional number in JSON');
      while (i < n && isDigit(bytes[i]!)) i++;
    }
    if (bytes[i] === 0x65 || bytes[i] === 0x45) {
      i++;
      if (bytes[i] === 0x2b || bytes[i] === 0x2d) i++;
      if (!(i < n && isDigit(bytes[i]!))) fault('Exponent part is missing a number in JSON');
      while (i < n && isDigit(bytes[i]!)) i++;
    }
    return i > start;
  };

  const readLiteral = () => {
    for (const word of ['true', 'false', 'null']) {
      let k = 0;
      while (k < word.length && bytes[i + k] === word.charCodeAt(k)) k++;
      if (k === word.length) {
        i += k;
        return;
      }
    }
    fault(i >= n ? 'Unexpected end of JSON input' : `Unexpected token '${String.fromCharCode(bytes[i]!)}'`);
  };

  // Whether the container open at depth 1 is the top-level object's `input` list.
  let inputListOpen = false;

  /** Reads the value at bytes[i]; a container is only opened (the loop reads its contents). */
  const readValue = (): boolean => {
    skipWs();
    if (i >= n) fault('Unexpected end of JSON input');
    const b = bytes[i]!;
    if (depth === 0) topKind = b === 0x7b ? 'object' : 'other';
    if (valueIsInput) {
      inputKind = b === 0x5b ? 'list' : 'other';
      issues = new IssueList();
      entryIndex = 0;
    }
    if (depth === 2 && inputListOpen) {
      const index = entryIndex++;
      if (b === 0x22) {
        const t = new EntryTracker();
        readString((c) => t.push(c));
        const problem = inputEntryProblem(t.summary());
        if (problem) issues.add(() => ({ loc: [...loc, 'input', index], msg: `Value error, ${problem}`, type: 'value_error' }));
        return false;
      }
      issues.add(() => ({ loc: [...loc, 'input', index], msg: 'Input should be a valid string', type: 'string_type' }));
    }
    if (b === 0x7b || b === 0x5b) {
      if (depth === 1) inputListOpen = valueIsInput && b === 0x5b;
      setKind(depth, b === 0x7b);
      depth++;
      i++;
      return true;
    }
    if (b === 0x22) readString(null);
    else if (b === 0x2d || isDigit(b)) readNumber();
    else readLiteral();
    return false;
  };

  try {
    let justOpened = readValue();
    while (depth > 0) {
      skipWs();
      if (i >= n) fault('Unexpected end of JSON input');
      const inObject = isObject(depth - 1);
      const close = inObject ? 0x7d : 0x5d;
      if (bytes[i] === close) {
        i++;
        depth--;
        justOpened = false;
        continue;
      }
      if (!justOpened) {
        if (bytes[i] !== 0x2c) fault(`Expected ',' or '${String.fromCharCode(close)}' after ${inObject ? 'property value' : 'array element'} in JSON`);
        i++;
        skipWs();
      }
      valueIsInput = false;
      if (inObject) {
        if (bytes[i] !== 0x22) fault(i >= n ? 'Unexpected end of JSON input' : 'Expected double-quoted property name in JSON');
        const keyUnits: number[] = [];
        const topLevelKey = depth === 1;
        readString(topLevelKey ? (c) => void (keyUnits.length <= 5 && keyUnits.push(c)) : null);
        skipWs();
        if (bytes[i] !== 0x3a) fault("Expected ':' after property name in JSON");
        i++;
        valueIsInput = topLevelKey && keyUnits.length === 5 && String.fromCharCode(...keyUnits) === 'input';
      }
      justOpened = readValue();
      valueIsInput = false;
    }
    skipWs();
    if (i < n) fault('Unexpected non-whitespace character after JSON');
  } catch (e) {
    if (e instanceof SyntaxFault) {
      throw new ValidationError([{ loc: [...syntaxLoc, e.at], msg: `JSON decode error: ${e.message} at position ${e.at}`, type: 'json_invalid' }]);
    }
    throw e;
  }

  if (topKind !== 'object') throw new ValidationError([{ loc, msg: 'Input should be a valid dictionary', type: 'dict_type' }]);
  if (inputKind === null) throw new ValidationError([{ loc: [...loc, 'input'], msg: 'Field required', type: 'missing' }]);
  if (inputKind !== 'list') throw new ValidationError([{ loc: [...loc, 'input'], msg: 'Input should be a valid list', type: 'list_type' }]);
  if (issues.size) throw new ValidationError(issues);
}
