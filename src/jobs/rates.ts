// The deployment's rate card (MACHINE_RATES; docs/callers.md "Cost"). No imports: the operator's
// command reads the same card from wrangler.toml (src/tools/wrangler.ts machineRates).

/**
 * The deployment's rate card (MACHINE_RATES): USD per GPU-hour by machine type, and the
 * rate of every type it does not name (its `*`; null when it has none: such a type is
 * unknown, and an agent token of it claims nothing). The machine type a lease is billed
 * as is its agent token's, set by the operator (src/admin/statements.ts createAgentToken),
 * never the host's word; and a Map, so that no name ("constructor", "__proto__") reads
 * anything the card does not say.
 */
export interface MachineRates {
  byType: ReadonlyMap<string, number>;
  other: number | null;
}

const logProblem = (msg: string) => console.error(JSON.stringify({ level: 'error', msg }));

/** MACHINE_RATES unset: every machine type is free (docs/operators.md "Configuration"). */
const FREE: MachineRates = { byType: new Map(), other: 0 };

/**
 * Reads MACHINE_RATES (a JSON object of rates). A rate that is not a finite number ≥ 0 is
 * left out, and said; text that is not such an object leaves every type unknown (no
 * claims rather than free ones), and is said.
 */
export function parseMachineRates(json: string | undefined, problem: (msg: string) => void = logProblem): MachineRates {
  if (json === undefined || json.trim() === '') return FREE;
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    parsed = undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    problem('MACHINE_RATES is not a JSON object of rates: no machine type has a rate, so agents claim nothing');
    return { byType: new Map(), other: null };
  }
  const byType = new Map<string, number>();
  let other: number | null = null;
  for (const [type, rate] of Object.entries(parsed)) {
    if (typeof rate !== 'number' || !Number.isFinite(rate) || rate < 0) {
      problem(`MACHINE_RATES: the rate of ${JSON.stringify(type)} is not a number ≥ 0; left out`);
      continue;
    }
    if (type.includes('\0')) {
      problem(`MACHINE_RATES: the machine type ${JSON.stringify(type)} has a NUL character; left out`);
      continue;
    }
    if (type === '*') other = rate;
    else byType.set(type, rate);
  }
  return { byType, other };
}

/** The rate (USD per GPU-hour) of a machine type; null: the card does not know it. */
export const rateOf = (rates: MachineRates, machineType: string): number | null => rates.byType.get(machineType) ?? rates.other;
