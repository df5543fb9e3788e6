import type { Env } from '../env.ts';
import type { FleetSettings } from './state.ts';

/** Defaults of the fleet's tunables (README "Configuration"); each can be overridden by a var. */
export const FLEET_DEFAULTS = {
  LEASE_TTL_SECONDS: 60,
  MAX_ATTEMPTS: 5,
  MAX_RETRIES: 2,
  RENOTIFY_AFTER_SECONDS: 60,
  AGENT_STALE_SECONDS: 300,
};

const num = (v: string | undefined, fallback: number) => (v !== undefined && v !== '' && Number.isFinite(Number(v)) ? Number(v) : fallback);

export function fleetSettings(env: Env): FleetSettings & { renotifyAfterMs: number; agentStaleMs: number } {
  let machineRates: Record<string, number> = { '*': 0 };
  if (env.MACHINE_RATES) {
    try {
      machineRates = JSON.parse(env.MACHINE_RATES) as Record<string, number>;
    } catch {
      console.error(JSON.stringify({ level: 'error', msg: 'MACHINE_RATES is not JSON; costs are 0' }));
    }
  }
  return {
    leaseTtlMs: num(env.LEASE_TTL_SECONDS, FLEET_DEFAULTS.LEASE_TTL_SECONDS) * 1000,
    maxAttempts: num(env.MAX_ATTEMPTS, FLEET_DEFAULTS.MAX_ATTEMPTS),
    maxRetries: num(env.MAX_RETRIES, FLEET_DEFAULTS.MAX_RETRIES),
    machineRates,
    renotifyAfterMs: num(env.RENOTIFY_AFTER_SECONDS, FLEET_DEFAULTS.RENOTIFY_AFTER_SECONDS) * 1000,
    agentStaleMs: num(env.AGENT_STALE_SECONDS, FLEET_DEFAULTS.AGENT_STALE_SECONDS) * 1000,
  };
}
