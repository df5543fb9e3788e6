// Lines with a bound (prover-agent/src/lib/lines.ts): how a child's output becomes
// lines in the agent, whatever the child prints. A line past the cap is handed on cut,
// with a mark, as soon as it passes it, and the rest of it never piles up.
import { describe, expect, it } from 'vitest';
import { spawnChild } from '../../prover-agent/src/lib/child-process.ts';
import { cutLine, cutMark, LineSplitter } from '../../prover-agent/src/lib/lines.ts';

/** The lines a splitter with cap `max` hands on for `pieces`, pushed one after another, then ended. */
function split(pieces: string[], max = 10): string[] {
  const out: string[] = [];
  const s = new LineSplitter(max, (l) => out.push(l));
  for (const p of pieces) s.push(p);
  s.end();
  return out;
}

describe('LineSplitter', () => {
  it('splits as node:readline does: \\n, \\r\\n and a lone \\r end a line, however the text is cut into pieces', () => {
    const text = 'one\ntwo\r\nthree\rfour\n\nlast';
    const whole = split([text]);
    expect(whole).toEqual(['one', 'two', 'three', 'four', '', 'last']);
    for (let at = 0; at <= text.length; at++) expect(split([text.slice(0, at), text.slice(at)])).toEqual(whole);
    expect(split([...text])).toEqual(whole);
  });

  it('hands on a line past its cap at once, cut with a mark, and skips the rest of it to its end', () => {
    const out: string[] = [];
    const s = new LineSplitter(10, (l) => out.push(l));
    s.push('0123456789ab');
    expect(out).toEqual([cutLine('0123456789ab', 10)]); // before the line's end: it streams
    expect(out[0]).toBe(`0123456789${cutMark(10)}`);
    for (let i = 0; i < 1000; i++) s.push('x'.repeat(1000)); // dropped as it comes
    s.push('yz\nnext line\n');
    s.end();
    expect(out).toEqual([`0123456789${cutMark(10)}`, 'next line']);
    expect(split(['exactly 10'])).toEqual(['exactly 10']);
  });
});

describe('a child’s output', () => {
  it('a child that prints 64 MiB without a newline reaches the agent as one cut line, then its next lines', async () => {
    const lines: string[] = [];
    const child = spawnChild(
      process.execPath,
      ['-e', "const b = 'x'.repeat(1 << 20); for (let i = 0; i < 64; i++) process.stdout.write(b); process.stdout.write('\\nafter\\n');"],
      { ownGroup: false, maxLineChars: { stdout: 4096, stderr: 4096 }, onStdoutLine: (l) => lines.push(l) },
    );
    expect(await child.closed).toEqual([0, null]);
    expect(lines).toEqual(['x'.repeat(4096) + cutMark(4096), 'after']);
  });
});
