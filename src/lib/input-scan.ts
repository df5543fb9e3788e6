// The proof input document `{"input": [hex, ...]}`, checked in one pass over its
// bytes as they arrive, without building it or holding it. JSON.parse of a cap-sized
// input of millions of tiny entries costs hundreds of MB (one JS string per entry),
// past a Worker's 128 MB; and holding the document whole to scan it costs its size.
// This scan is fed chunk by chunk (a request body, a multipart part) and holds, besides
// a few counters, at most 5 bytes of a chunk's tail (a `\u` escape or a literal cut by
// the chunk boundary), one bit per open nesting level, and the listed issues (at most
// MAX_LISTED_ISSUES): linear time, memory bounded whatever the size or the split.
//
// It answers what JSON.parse followed by the entry checks answered, in the same
// order: malformed JSON (json_invalid, at its byte offset), then a body that is not
// an object (dict_type), no `input` (missing), an `input` that is not a list
// (list_type), then every bad entry at its index (string_type, value_error). As with
// JSON.parse, a repeated key's last value counts. Escapes in strings are decoded.
// However the bytes are split into chunks, the answer is the same.
import { concatBytes, utf8Bytes } from './bytes.ts';
import { IssueList, ValidationError } from './errors.ts';
import { inputEntryProblem, type EntrySummary } from 'prover-agent/protocol';

const isWs = (b: number) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
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
const LITERALS = ['true', 'false', 'null'].map((w) => utf8Bytes(w));
const isDigit = (b: number | undefined) => b !== undefined && b >= 0x30 && b <= 0x39;
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
  /** push() of each of bytes[from..to), each one unit. */
  pushRun(bytes: Uint8Array, from: number, to: number) {
    let k = from;
    while (k < to && this.length < 4) this.push(bytes[k++]);
    if (this.hexFrom2)
      for (let m = k; m < to; m++)
        if (!isHexCode(bytes[m])) {
          this.hexFrom2 = false;
          break;
        }
    this.length += to - k;
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

// Where the scan is: the grammar's states, each resumable at any byte.
const VALUE = 0; // a value is next (whitespace first)
const STRING = 1; // inside a string (what it is: `stringKind`)
const AFTER_KEY = 2; // a property name was read: whitespace, then ':'
const KEY_START = 3; // a property name is next (whitespace first)
const CONTAINER = 4; // inside an object or a list: its close, or (but first) ',' and a member
const NUMBER = 5; // inside a number (where: `numberPhase`)
const LITERAL = 6; // true, false or null at the next byte
const DONE = 7; // the document's value ended: only whitespace may follow
const FAULT = 8; // malformed: the rest is not looked at

const SKIP = 0; // a string nobody asks about
const KEY = 1; // a property name of the top-level object (its first units kept)
const ENTRY = 2; // an entry of the input list

// Number phases (after the optional minus sign).
const N_INT_START = 0;
const N_INT = 1;
const N_AFTER_INT = 2;
const N_FRAC_START = 3;
const N_FRAC = 4;
const N_AFTER_FRAC = 5;
const N_EXP_SIGN = 6;
const N_EXP_START = 7;
const N_EXP = 8;

/**
 * The incremental scan: `push()` each chunk, then `end()` answers the 422 the whole
 * document gets, or null. `push()` never throws; a malformed document stops the scan
 * at its fault. `syntaxLoc` is where malformed JSON is reported (`["body", "input"]`
 * when the document came as a multipart form field); its fields are always `["body", …]`.
 */
export class ProofInputScan {
  private readonly loc = ['body'];
  /** Absolute offset of the first byte of `carry` (or of the next chunk). */
  private pos = 0;
  private carry: Uint8Array = new Uint8Array(0);
  private state = VALUE;
  private fault: SyntaxFault | null = null;

  // Container kinds per depth, one bit each (1 = object), grown as the nesting deepens.
  private kinds = new Uint8Array(16);
  private depth = 0;
  /** Whether the container after a CONTAINER state's whitespace was just opened (no ',' before its first member). */
  private justOpened = false;

  private topKind: 'object' | 'other' | null = null;
  // The last `input` of the top-level object: its kind, and its entries' problems.
  private inputKind: 'list' | 'other' | null = null;
  private issues = new IssueList();
  private entryIndex = 0;
  // Whether the value about to be read is the top-level object's `input`.
  private valueIsInput = false;
  // Whether the container open at depth 1 is the top-level object's `input` list.
  private inputListOpen = false;

  private stringKind = SKIP;
  /** Whether the string being read is a property name (of any object). */
  private stringIsKey = false;
  private keyUnits: number[] = [];
  private tracker = new EntryTracker();
  private trackedIndex = 0;
  private numberPhase = N_INT_START;

  constructor(private readonly syntaxLoc: (string | number)[] = ['body']) {}

  push(chunk: Uint8Array): void {
    if (this.state === FAULT || chunk.byteLength === 0) return;
    this.run(this.carry.length ? concatBytes(this.carry, chunk) : chunk, false);
  }

  /** The document's 422, or null when it is a valid proof input. */
  end(): ValidationError | null {
    if (this.state !== FAULT) this.run(this.carry, true);
    const fault = this.fault;
    if (fault)
      return new ValidationError([
        { loc: [...this.syntaxLoc, fault.at], msg: `JSON decode error: ${fault.message} at position ${fault.at}`, type: 'json_invalid' },
      ]);
    const loc = this.loc;
    if (this.topKind !== 'object') return new ValidationError([{ loc, msg: 'Input should be a valid dictionary', type: 'dict_type' }]);
    if (this.inputKind === null) return new ValidationError([{ loc: [...loc, 'input'], msg: 'Field required', type: 'missing' }]);
    if (this.inputKind !== 'list')
      return new ValidationError([{ loc: [...loc, 'input'], msg: 'Input should be a valid list', type: 'list_type' }]);
    return this.issues.size ? new ValidationError(this.issues) : null;
  }

  private run(data: Uint8Array, final: boolean): void {
    let i = 0;
    try {
      const wantsMore = this.steps(data, final, (at) => (i = at));
      if (wantsMore && final) throw new Error('input scan: more bytes asked for at the end');
      this.carry = data.slice(i);
      this.pos += i;
    } catch (e) {
      if (!(e instanceof SyntaxFault)) throw e;
      this.fault = e;
      this.state = FAULT;
      this.carry = new Uint8Array(0);
    }
  }

  private setKind(d: number, object: boolean) {
    if (d >> 3 >= this.kinds.length) {
      const grown = new Uint8Array(this.kinds.length * 2);
      grown.set(this.kinds);
      this.kinds = grown;
    }
    if (object) this.kinds[d >> 3] |= 1 << (d & 7);
    else this.kinds[d >> 3] &= ~(1 << (d & 7));
  }

  private isObject(d: number) {
    return (this.kinds[d >> 3] & (1 << (d & 7))) !== 0;
  }

  /** After a value: the enclosing container goes on, or the document is done. */
  private valueDone() {
    this.state = this.depth === 0 ? DONE : CONTAINER;
    this.justOpened = false;
  }

  /**
   * Runs the grammar over `data` from its start; returns true (having reported through
   * `consumed` how far it got: the bytes from there on are carried over to the next
   * chunk) when the bytes run out before the document's end. With `final`, the end of
   * `data` is the end of the document.
   */
  private steps(data: Uint8Array, final: boolean, consumed: (i: number) => void): boolean {
    const n = data.length;
    let i = 0;
    const fault = (msg: string): never => {
      throw new SyntaxFault(msg, this.pos + i);
    };
    const more = () => {
      consumed(i);
      return true;
    };
    for (;;) {
      switch (this.state) {
        case VALUE: {
          while (i < n && isWs(data[i])) i++;
          if (i >= n) {
            if (!final) return more();
            fault('Unexpected end of JSON input');
          }
          const b = data[i];
          if (this.depth === 0) this.topKind = b === 0x7b ? 'object' : 'other';
          const isInput = this.valueIsInput;
          this.valueIsInput = false;
          if (isInput) {
            this.inputKind = b === 0x5b ? 'list' : 'other';
            this.issues = new IssueList();
            this.entryIndex = 0;
          }
          if (this.depth === 2 && this.inputListOpen) {
            const index = this.entryIndex++;
            if (b === 0x22) {
              i++;
              this.tracker = new EntryTracker();
              this.trackedIndex = index;
              this.stringKind = ENTRY;
              this.stringIsKey = false;
              this.state = STRING;
              break;
            }
            const loc = this.loc;
            this.issues.add(() => ({ loc: [...loc, 'input', index], msg: 'Input should be a valid string', type: 'string_type' }));
          }
          if (b === 0x7b || b === 0x5b) {
            if (this.depth === 1) this.inputListOpen = isInput && b === 0x5b;
            this.setKind(this.depth, b === 0x7b);
            this.depth++;
            i++;
            this.state = CONTAINER;
            this.justOpened = true;
          } else if (b === 0x22) {
            i++;
            this.stringKind = SKIP;
            this.stringIsKey = false;
            this.state = STRING;
          } else if (b === 0x2d || isDigit(b)) {
            if (b === 0x2d) i++;
            this.numberPhase = N_INT_START;
            this.state = NUMBER;
          } else this.state = LITERAL;
          break;
        }

        case STRING: {
          const kind = this.stringKind;
          for (;;) {
            if (kind !== KEY) {
              // The common case, a run of plain bytes, in one tight loop.
              let j = i;
              for (let c = data[j]; j < n && c !== 0x22 && c !== 0x5c && c >= 0x20; c = data[++j]);
              if (kind === ENTRY && j > i) this.tracker.pushRun(data, i, j);
              i = j;
            }
            if (i >= n) {
              if (!final) return more();
              fault('Unterminated string');
            }
            const b = data[i];
            if (b === 0x22) {
              i++;
              break;
            }
            if (b < 0x20) fault('Bad control character in string literal');
            let unit = b;
            if (b === 0x5c) {
              // An escape is read whole: wait for its bytes (6 for \uXXXX, else 2).
              if (n - i < (data[i + 1] === 0x75 ? 6 : 2) && !final) return more();
              const e = data[i + 1];
              if (e === undefined) fault('Unterminated string');
              if (e === 0x75) {
                let v = 0;
                for (let k = 2; k < 6; k++) {
                  const h = data[i + k];
                  if (h === undefined || !isHexCode(h)) fault('Bad Unicode escape in JSON');
                  v = v * 16 + parseInt(String.fromCharCode(h), 16);
                }
                unit = v;
                i += 6;
              } else {
                const decoded = SIMPLE_ESCAPES.get(e);
                if (decoded === undefined) fault('Bad escaped character in JSON');
                unit = decoded!;
                i += 2;
              }
            } else i++; // a multi-byte UTF-8 sequence is never a hex digit: one unit stands for each byte
            if (kind === ENTRY) this.tracker.push(unit);
            else if (kind === KEY && this.keyUnits.length <= 5) this.keyUnits.push(unit);
          }
          if (this.stringIsKey) this.state = AFTER_KEY;
          else {
            if (kind === ENTRY) {
              const problem = inputEntryProblem(this.tracker.summary());
              const [loc, index] = [this.loc, this.trackedIndex];
              if (problem) this.issues.add(() => ({ loc: [...loc, 'input', index], msg: `Value error, ${problem}`, type: 'value_error' }));
            }
            this.valueDone();
          }
          break;
        }

        case AFTER_KEY: {
          while (i < n && isWs(data[i])) i++;
          if (i >= n && !final) return more();
          if (data[i] !== 0x3a) fault("Expected ':' after property name in JSON");
          i++;
          this.valueIsInput = this.stringKind === KEY && this.keyUnits.length === 5 && String.fromCharCode(...this.keyUnits) === 'input';
          this.state = VALUE;
          break;
        }

        case KEY_START: {
          while (i < n && isWs(data[i])) i++;
          if (i >= n) {
            if (!final) return more();
            fault('Unexpected end of JSON input');
          }
          if (data[i] !== 0x22) fault('Expected double-quoted property name in JSON');
          i++;
          this.stringKind = this.depth === 1 ? KEY : SKIP;
          this.stringIsKey = true;
          this.keyUnits = [];
          this.state = STRING;
          break;
        }

        case CONTAINER: {
          while (i < n && isWs(data[i])) i++;
          if (i >= n) {
            if (!final) return more();
            fault('Unexpected end of JSON input');
          }
          const inObject = this.isObject(this.depth - 1);
          const close = inObject ? 0x7d : 0x5d;
          if (data[i] === close) {
            i++;
            this.depth--;
            this.valueDone();
            break;
          }
          if (!this.justOpened) {
            if (data[i] !== 0x2c)
              fault(`Expected ',' or '${String.fromCharCode(close)}' after ${inObject ? 'property value' : 'array element'} in JSON`);
            i++;
          }
          this.valueIsInput = false;
          this.state = inObject ? KEY_START : VALUE;
          break;
        }

        case NUMBER: {
          // Each phase looks at one byte (none past the end of the document).
          if (i >= n && !final) return more();
          const b = data[i];
          switch (this.numberPhase) {
            case N_INT_START:
              if (b === 0x30) {
                i++;
                this.numberPhase = N_AFTER_INT;
              } else if (isDigit(b)) this.numberPhase = N_INT;
              else fault('No number after minus sign in JSON');
              break;
            case N_INT:
            case N_FRAC:
            case N_EXP:
              while (i < n && isDigit(data[i])) i++;
              if (i >= n && !final) return more();
              if (this.numberPhase === N_EXP) this.valueDone();
              else this.numberPhase = this.numberPhase === N_INT ? N_AFTER_INT : N_AFTER_FRAC;
              break;
            case N_AFTER_INT:
              if (b === 0x2e) {
                i++;
                this.numberPhase = N_FRAC_START;
                break;
              }
            // falls through: no fraction, perhaps an exponent
            case N_AFTER_FRAC:
              if (b === 0x65 || b === 0x45) {
                i++;
                this.numberPhase = N_EXP_SIGN;
              } else this.valueDone();
              break;
            case N_FRAC_START:
              if (!isDigit(b)) fault('Unterminated fractional number in JSON');
              this.numberPhase = N_FRAC;
              break;
            case N_EXP_SIGN:
              if (b === 0x2b || b === 0x2d) i++;
              this.numberPhase = N_EXP_START;
              break;
            case N_EXP_START:
              if (!isDigit(b)) fault('Exponent part is missing a number in JSON');
              this.numberPhase = N_EXP;
              break;
          }
          break;
        }

        case LITERAL: {
          // Read whole: wait while the bytes so far could still be the start of one.
          const avail = n - i;
          if (!final && LITERALS.some((w) => avail < w.length && w.subarray(0, avail).every((c, k) => data[i + k] === c))) return more();
          const word = LITERALS.find((w) => w.every((c, k) => data[i + k] === c));
          if (!word) fault(`Unexpected token '${String.fromCharCode(data[i])}'`);
          i += word!.length;
          this.valueDone();
          break;
        }

        case DONE: {
          while (i < n && isWs(data[i])) i++;
          if (i < n) fault('Unexpected non-whitespace character after JSON');
          return final ? false : more();
        }

        default:
          return false;
      }
    }
  }
}

/** Checks a whole input document in `bytes` (UTF-8 checked by the caller); throws the 422 a bad one gets. */
export function checkProofInputBytes(bytes: Uint8Array, syntaxLoc: (string | number)[] = ['body']): void {
  const scan = new ProofInputScan(syntaxLoc);
  scan.push(bytes);
  const refusal = scan.end();
  if (refusal) throw refusal;
}

/**
 * How deep a JSON text nests, found as its bytes stream by, without parsing it: one
 * pass and three counters (inside a string or not, after a backslash or not, the depth
 * now), whatever the size or the split. A route's door runs it over a JSON body before
 * anything parses it (src/middleware/door.ts): V8's JSON.parse takes a 100,000-deep array
 * whole, and what walks it afterwards (a validator, a copy) may not. It judges depth
 * only; whether the text is JSON is the parser's business (an unmatched close bracket
 * just lowers the count).
 */
export class JsonNesting {
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** Bytes seen before the current chunk. */
  private offset = 0;

  constructor(readonly maxDepth: number) {}

  /** Feeds the next bytes; the offset of the first byte that opens a level past maxDepth, or -1. */
  push(chunk: Uint8Array): number {
    let { depth, inString, escaped } = this;
    const max = this.maxDepth;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (b === 0x5c) escaped = true;
        else if (b === 0x22) inString = false;
      } else if (b === 0x22) inString = true;
      else if (b === 0x5b || b === 0x7b) {
        if (++depth > max) return this.offset + i;
      } else if (b === 0x5d || b === 0x7d) depth--;
    }
    Object.assign(this, { depth, inString, escaped });
    this.offset += chunk.length;
    return -1;
  }
}
