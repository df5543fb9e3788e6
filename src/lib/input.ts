// JSON text bodies. (The proof input format's entry checks, client-conventions.md
// "Input encoding", are the fleet protocol's, prover-agent/protocol inputEntryProblem,
// which the agents' engines make too; the streaming scan of a whole input document is
// ./input-scan.ts.)
import { ValidationError } from './errors.ts';

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
