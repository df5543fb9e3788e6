// Test helpers for the Worker: seed an organization, key and config with the same
// SQL the operator command runs, and call the API like a client does.
import { env } from 'cloudflare:test';
import { exports } from 'cloudflare:workers';
import { expect, vi } from 'vitest';
import { createApiKey, createConfig, createOrganization, type AdminStep, type NewConfig } from '../../src/admin/statements.ts';

export const BASE = 'https://api.test';

export async function runAdmin(step: AdminStep | Promise<AdminStep>): Promise<string> {
  const s = await step;
  for (const sql of s.sql) await env.DB.prepare(sql).run();
  return s.output[s.output.length - 1];
}

export interface Tenant {
  orgId: string;
  key: string;
  owner: string;
}

let tenants = 0;
export async function seedTenant(owner = `user${++tenants}@example.com`): Promise<Tenant> {
  const orgId = await runAdmin(createOrganization(`org of ${owner}`));
  const key = await runAdmin(createApiKey(orgId, owner));
  return { orgId, key, owner };
}

export const APP_VM_COMMIT = '0x' + 'ab'.repeat(32);

export async function seedConfig(overrides: Partial<NewConfig> = {}): Promise<string> {
  return runAdmin(
    createConfig({
      openvm_version: '1.4.0',
      stark_backend_version: '1.2.0',
      app_vm_commit: APP_VM_COMMIT,
      engine: 'dev',
      deferral_enabled: false,
      ...overrides,
    }),
  );
}

/** fetch() against the Worker with the tenant's API key. */
export function api(tenant: Tenant | null, path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (tenant) headers.set('Service-API-Key', tenant.key);
  return exports.default.fetch(new Request(BASE + path, { ...init, headers }));
}

/**
 * Waits until `check` passes (returns without throwing) for work the Worker does after
 * its response or on its own (waitUntil, a queue's delivery, a stream's loop): it gives
 * up only when that work is stuck, well inside the test's own timeout. Never a timing
 * assertion: vi.waitFor's default of 1 s is one, which a loaded host fails (issue 31, finding 7).
 */
export const eventually = <T>(check: () => T | Promise<T>): Promise<T> => vi.waitFor(check, { timeout: 45_000, interval: 20 });

export async function json<T = any>(res: Response, status: number): Promise<T> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  return JSON.parse(text) as T;
}

/** A committed guest ELF (test/guests/build) as bytes. */
export function guest(name: string): Uint8Array {
  const b64 = env.TEST_GUESTS[name];
  if (!b64) throw new Error(`test guest ${name} is not built (test/guests/build.sh)`);
  return Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
}

export function programForm(elf: Uint8Array | null, vmexe: Uint8Array | null, extra: Record<string, string> = {}): FormData {
  const form = new FormData();
  if (elf) form.append('elf', new File([elf], 'hello.elf', { type: 'application/octet-stream' }));
  if (vmexe) form.append('vmexe', new File([vmexe], 'hello.vmexe', { type: 'application/octet-stream' }));
  for (const [k, v] of Object.entries(extra)) form.append(k, v);
  return form;
}

export const VMEXE = new TextEncoder().encode('opaque vmexe bytes for the tests');

export async function registerProgram(tenant: Tenant, configId: string, query = ''): Promise<string> {
  const res = await api(tenant, `/v1/programs?config_id=${configId}${query}`, {
    method: 'POST',
    body: programForm(guest('hello.elf'), VMEXE),
  });
  return (await json<{ id: string }>(res, 201)).id;
}

/** Marks a program ready as its commit job would (the fleet's part, tested in the e2e suite): its exe commit and baseline recorded. */
export async function markReady(programId: string): Promise<void> {
  await env.DB.prepare(`UPDATE programs SET status = 'ready', app_exe_commit = ?, baseline_key = ? WHERE id = ?`)
    .bind('0x' + 'cd'.repeat(32), `programs/${programId}/baseline.json`, programId)
    .run();
}

/** Observes (and passes through) every message the Worker sends on the jobs queue. */
export function watchQueue() {
  return vi.spyOn(env.JOBS, 'send');
}

export async function countRows(table: string, where = '1=1', ...binds: unknown[]): Promise<number> {
  const row = await env.DB.prepare(`SELECT count(*) AS n FROM ${table} WHERE ${where}`)
    .bind(...binds)
    .first<{ n: number }>();
  return row!.n;
}

export async function r2Keys(prefix: string): Promise<string[]> {
  const list = await env.ARTIFACTS.list({ prefix });
  return list.objects.map((o) => o.key);
}

/** A seeded PRNG (mulberry32) returning floats in [0, 1): the same sequence on every run. */
export function seededRandom(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** SQLite's plan for a drizzle query, its steps' details one per line (EXPLAIN QUERY PLAN). */
export async function queryPlan(query: { toSQL(): { sql: string; params: unknown[] } }): Promise<string> {
  const { sql, params } = query.toSQL();
  const plan = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`)
    .bind(...params)
    .all<{ detail: string }>();
  return plan.results.map((r) => r.detail).join('\n');
}
