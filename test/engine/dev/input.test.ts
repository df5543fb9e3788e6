// The input file format (client-conventions.md, "Input encoding").
import { describe, expect, it } from 'vitest';
import { BABYBEAR_P, InputError, parseInputJson } from '../../../prover-agent/src/engine/dev/input.ts';

const parse = (...entries: unknown[]) => parseInputJson(JSON.stringify({ input: entries }));

describe('input parsing', () => {
  it('reads byte entries with or without 0x, in any case', () => {
    expect(parse('0x01aBcD', '01ff', '0x01')).toEqual([
      { kind: 'bytes', data: Uint8Array.of(0xab, 0xcd) },
      { kind: 'bytes', data: Uint8Array.of(0xff) },
      { kind: 'bytes', data: new Uint8Array(0) },
    ]);
  });

  it('reads field-element entries as little-endian u32 words', () => {
    const max = (BABYBEAR_P - 1).toString(16).padStart(8, '0').match(/../g)!.reverse().join('');
    expect(parse(`0x0201000000${max}`, '02')).toEqual([
      { kind: 'field', data: Uint32Array.of(1, BABYBEAR_P - 1) },
      { kind: 'field', data: new Uint32Array(0) },
    ]);
  });

  it('accepts an empty input', () => {
    expect(parse()).toEqual([]);
  });

  const bad: [string, string, RegExp][] = [
    ['not JSON', '{"input": [', /input file is not JSON/],
    ['no input array', '{"inputs": []}', /must be a JSON object \{"input": \[\.\.\.\]\}/],
    ['a string entry that is not hex', '{"input": ["0x01zz"]}', /input\[0\]: not an even-length hex string/],
    ['an odd-length entry', '{"input": ["0x01", "0x011"]}', /input\[1\]: not an even-length hex string/],
    ['an empty entry', '{"input": ["0x"]}', /input\[0\]: empty/],
    ['an unknown prefix', '{"input": ["0x03aa"]}', /input\[0\]: unknown prefix 0x03/],
    ['a non-string entry', '{"input": [1]}', /input\[0\]: not a string/],
    [
      'a partial field element',
      '{"input": ["0x02010000"]}',
      /input\[0\]: field-element entry of 3 bytes is not a whole number of 32-bit words/,
    ],
    [
      'a field element not below p',
      `{"input": ["0x0201000000${'01000078'}"]}`,
      /input\[0\]: field element 1 \(2013265921\) is not below the BabyBear modulus/,
    ],
  ];
  for (const [what, text, message] of bad) {
    it(`rejects ${what}`, () => {
      expect(() => parseInputJson(text)).toThrow(InputError);
      expect(() => parseInputJson(text)).toThrow(message);
    });
  }
});
