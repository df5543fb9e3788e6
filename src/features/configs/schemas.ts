// The configuration record callers read (interface section 2, GET /v1/configs/{id}):
// its zod schema for the OpenAPI document and the function that builds it from a row.
import { z } from '@hono/zod-openapi';
import type { configs } from '../../db/schema.ts';
import { Timestamp as ts } from '../../lib/schemas.ts';

export const ConfigRecord = z
  .object({
    id: z.string(),
    created_at: ts,
    openvm_version: z.string(),
    stark_backend_version: z.string(),
    status: z.string(),
    active: z.boolean(),
    app_vm_commit: z.string(),
  })
  .openapi('Configuration');

export function configRecord(c: typeof configs.$inferSelect): z.infer<typeof ConfigRecord> {
  return {
    id: c.id,
    created_at: c.created_at,
    openvm_version: c.openvm_version,
    stark_backend_version: c.stark_backend_version,
    status: c.status,
    active: c.active,
    app_vm_commit: c.app_vm_commit,
  };
}
