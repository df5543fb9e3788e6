// Lines of text with a bound on what one line may hold. A child's output (an engine
// process, the zkVM tool and the guest it runs) can be one line of any length: read by
// node:readline it is held whole until its end (a guest's 300 MiB printed without a
// newline: gigabytes in the agent). Here a line that grows past its cap is handed on
// at once, cut, with a mark that says so, and the rest of it is dropped as it arrives.
// (split2's maxLength drops or fails such a line; none of the line splitters keeps
// its start and says it was cut.)
import type { Readable } from 'node:stream';

/** What ends a line cut at `max` characters (the rest of it was dropped). */
export const cutMark = (max: number) => ` … [line cut: longer than ${max} characters]`;

/** `line` whole when it is at most `max` characters, else its first `max` and the cut mark. */
export function cutLine(line: string, max: number): string {
  return line.length <= max ? line : line.slice(0, max) + cutMark(max);
}

/**
 * Text in, lines out, as node:readline splits them (at `\n`, `\r\n` or a lone `\r`),
 * holding at most `maxChars` characters of one line: a longer line is handed on, cut
 * (cutLine), as soon as it passes the cap, and the rest of it is skipped up to its end.
 */
export class LineSplitter {
  private parts: string[] = [];
  private held = 0;
  /** The line being read was cut: skip to its end. */
  private skipping = false;
  /** The previous piece ended with `\r`: a `\n` first in this one ends no other line. */
  private afterCr = false;
  private readonly maxChars: number;
  private readonly onLine: (line: string) => void;

  constructor(maxChars: number, onLine: (line: string) => void) {
    this.maxChars = maxChars;
    this.onLine = onLine;
  }

  push(text: string): void {
    let at = this.afterCr && text.startsWith('\n') ? 1 : 0;
    this.afterCr = false;
    // The next \n and \r at or after `at` (-1: none), each looked for again only once passed.
    let nl = text.indexOf('\n', at);
    let cr = text.indexOf('\r', at);
    while (nl >= 0 || cr >= 0) {
      const end = nl < 0 ? cr : cr < 0 ? nl : Math.min(nl, cr);
      this.add(text.slice(at, end));
      this.endLine();
      at = end + 1;
      if (end === cr) {
        if (text.charCodeAt(at) === 10)
          at++; // \r\n
        else if (at === text.length) this.afterCr = true;
      }
      if (nl >= 0 && nl < at) nl = text.indexOf('\n', at);
      if (cr >= 0 && cr < at) cr = text.indexOf('\r', at);
    }
    this.add(text.slice(at));
  }

  /** The text has ended: a last line without a line end is handed on too. */
  end(): void {
    if (this.held > 0) this.endLine();
  }

  private add(piece: string): void {
    if (this.skipping || piece.length === 0) return;
    if (this.held + piece.length <= this.maxChars) {
      this.parts.push(piece);
      this.held += piece.length;
      return;
    }
    this.parts.push(piece.slice(0, this.maxChars - this.held));
    this.onLine(this.parts.join('') + cutMark(this.maxChars));
    this.parts = [];
    this.held = 0;
    this.skipping = true;
  }

  private endLine(): void {
    if (!this.skipping) this.onLine(this.parts.join(''));
    this.parts = [];
    this.held = 0;
    this.skipping = false;
  }
}

/** Hands `onLine` each line of `stream` (UTF-8 text), as LineSplitter cuts them. */
export function readLines(stream: Readable, maxChars: number, onLine: (line: string) => void): void {
  const lines = new LineSplitter(maxChars, onLine);
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => lines.push(chunk));
  stream.on('end', () => lines.end());
}
