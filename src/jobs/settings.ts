import type { Env } from '../env.ts';
import type { FleetSettings } from './state.ts';
import { quotaDefaults, type QuotaDefaults } from './quotas.ts';
import { TENANT_DEFAULTS } from '../lib/limits.ts';
import { parseMachineRates } from './rates.ts';

export { TENANT_DEFAULTS };

/** Defaults of the fleet's tunables (README "Configuration"); each can be overridden by a var. */
export const FLEET_DEFAULTS = {
  // A lease outlives two heartbeats plus a margin, so one lost beat costs nothing, and a
  // dead agent's job is claimable 7-12 s after its death (README "How jobs run").
  LEASE_TTL_SECONDS: 12,
  /** Lease renewals at most this often: the D1 write budget of a running job. */
  HEARTBEAT_SECONDS: 5,
  /** Read-only cancel checks between renewals: a cancel reaches the agent within about this long. */
  CANCEL_CHECK_SECONDS: 1,
  /**
   * The longest a lease may be renewed for, from its claim: a host (a stuck one, or a
   * compromised one keeping a tenant's job and input) cannot hold a job forever by
   * heartbeats. Past it the heartbeat answers 409 and the lease expires as a lost one
   * would (src/jobs/state.ts heartbeat). Six hours: longer than any proof the fleet runs.
   */
  MAX_LEASE_SECONDS: 6 * 3600,
  MAX_ATTEMPTS: 5,
  MAX_RETRIES: 2,
  RENOTIFY_AFTER_SECONDS: 60,
  AGENT_STALE_SECONDS: 300,
  /** A queued proof or execution no online agent could take for this long raises its `*.unservable` webhook event, once (src/jobs/waiting.ts). */
  UNSERVABLE_EVENT_SECONDS: 600,
};

const num = (v: string | undefined, fallback: number) => (v !== undefined && v !== '' && Number.isFinite(Number(v)) ? Number(v) : fallback);

export interface AgentTimings {
  /** Heartbeats (lease renewals) every this many ms. */
  heartbeatIntervalMs: number;
  /** Cancel checks (reads) every this many ms. */
  cancelCheckIntervalMs: number;
}

export function fleetSettings(
  env: Env,
): FleetSettings & AgentTimings & { quotas: QuotaDefaults; renotifyAfterMs: number; agentStaleMs: number; unservableEventMs: number } {
  const machineRates = parseMachineRates(env.MACHINE_RATES);
  const leaseTtlMs = num(env.LEASE_TTL_SECONDS, FLEET_DEFAULTS.LEASE_TTL_SECONDS) * 1000;
  return {
    leaseTtlMs,
    // Never so rare that one lost beat loses the lease: at most TTL / 2.4 (5 s of 12).
    heartbeatIntervalMs: Math.max(
      500,
      Math.min(num(env.HEARTBEAT_SECONDS, FLEET_DEFAULTS.HEARTBEAT_SECONDS) * 1000, Math.floor(leaseTtlMs / 2.4)),
    ),
    cancelCheckIntervalMs: Math.max(100, num(env.CANCEL_CHECK_SECONDS, FLEET_DEFAULTS.CANCEL_CHECK_SECONDS) * 1000),
    // Never shorter than one lease.
    maxLeaseMs: Math.max(leaseTtlMs, num(env.MAX_LEASE_SECONDS, FLEET_DEFAULTS.MAX_LEASE_SECONDS) * 1000),
    maxAttempts: num(env.MAX_ATTEMPTS, FLEET_DEFAULTS.MAX_ATTEMPTS),
    maxRetries: num(env.MAX_RETRIES, FLEET_DEFAULTS.MAX_RETRIES),
    machineRates,
    quotas: quotaDefaults(env),
    renotifyAfterMs: num(env.RENOTIFY_AFTER_SECONDS, FLEET_DEFAULTS.RENOTIFY_AFTER_SECONDS) * 1000,
    agentStaleMs: num(env.AGENT_STALE_SECONDS, FLEET_DEFAULTS.AGENT_STALE_SECONDS) * 1000,
    unservableEventMs: num(env.UNSERVABLE_EVENT_SECONDS, FLEET_DEFAULTS.UNSERVABLE_EVENT_SECONDS) * 1000,
  };
}

/** What one tenant or one host may hold (src/lib/limits.ts TENANT_DEFAULTS), each overridable by a var of its name. */
export type TenantLimits = typeof TENANT_DEFAULTS;

export function tenantLimits(env: Env): TenantLimits {
  // A var named for each limit, if the deployment sets one (Env declares only some of them).
  const set = (name: string) => {
    const value: unknown = Reflect.get(env, name);
    return value === undefined ? undefined : String(value);
  };
  return Object.fromEntries(Object.entries(TENANT_DEFAULTS).map(([k, v]) => [k, Math.max(1, Math.floor(num(set(k), v)))])) as TenantLimits;
}
