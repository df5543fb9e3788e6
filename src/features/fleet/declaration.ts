// What a host declares (its machine type, its free GPUs) against what its agent token
// says it is and may hold, the operator's word (agent_tokens.machine_type, max_gpus,
// max_leases; src/admin/statements.ts createAgentToken). A declaration can only be
// narrower than its token:
// - a machine type other than the token's is refused (403): a name is not a bound to
//   clamp, and a host billed, recorded and measured (proving_rates, estimates) as a type
//   it is not would misprice every job it runs; so is one this deployment's MACHINE_RATES
//   does not price (no `*`): its jobs would run unbilled;
// - GPUs or concurrency past the token's are clamped, not refused: more GPUs than the
//   token's is still an honest host's offer, bounded again by the token; the claim takes
//   only jobs that fit what the token's live leases leave (src/jobs/state.ts nextJobFor),
//   and presence records no more GPUs than the token's.
import type { AppEnv, VariablesOf } from '../../app-env.ts';
import { rateOf, type MachineRates } from '../../jobs/rates.ts';
import { ApiError } from '../../lib/errors.ts';
import { liveTokenMachineType } from './data.ts';

/** The refusal of a host declaring another machine type than its token's. */
export const otherMachineType = (token: string, declared: string) =>
  new ApiError(
    403,
    `This agent token is for machine type ${JSON.stringify(token)}, not ${JSON.stringify(declared)}: run the agent with --machine-type ${token}, or ask the operator for a token of its type`,
  );

/**
 * Refuses (403) a declared machine type the deployment does not price, before any work
 * is done for it; a bad agent token (`agentTokenHash`: the request's, or for a
 * completion's next claim the one that claimed its lease) is answered 401 first (one
 * read, on this path only).
 */
export async function requirePricedMachineType(
  c: VariablesOf<AppEnv['Variables']>,
  rates: MachineRates,
  declared: string,
  agentTokenHash: string,
): Promise<void> {
  if (rateOf(rates, declared) !== null) return;
  const token = await liveTokenMachineType(c.get('db'), agentTokenHash);
  if (!token) throw new ApiError(401, 'Invalid or revoked agent token');
  if (token.machine_type !== declared) throw otherMachineType(token.machine_type, declared);
  throw new ApiError(
    403,
    `Machine type ${JSON.stringify(declared)} has no rate in this deployment's MACHINE_RATES: its jobs cannot be billed, so its hosts claim nothing (the operator adds it)`,
  );
}
