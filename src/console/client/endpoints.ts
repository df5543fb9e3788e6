// The /console/v1 endpoints this client uses, each with the type of its answer (the
// server's schemas, src/console/ui/api-types.ts): the one list of paths in the client.
import type * as T from '../ui/api-types.ts';
import { authCall, call, callJson } from './http.ts';

const seg = encodeURIComponent;

/** Anyone: sign in, set or reset a password, read and accept an invitation (`token` from the link). */
export const authApi = {
  signIn: (email: string, password: string) => authCall<T.Token>('signin', { email, password }),
  setPassword: (token: string, password: string) => authCall<T.PasswordSet>('set-password', { token, password }),
  askPasswordReset: (email: string) => authCall<T.Message>('password-reset', { email }),
  resetPassword: (token: string, password: string, revokeApiKeys: boolean) =>
    authCall<T.PasswordSet>('reset-password', { token, password, revoke_api_keys: revokeApiKeys }),
  readInvite: (token: string) => authCall<T.InviteSummary>('invite', { token }),
  /** A new account: its password and name. */
  acceptAsNew: (token: string, password: string, name?: string) => authCall<T.InviteAccepted>('accept-invite', { token, password, name }),
  /** An existing account, signed in as itself (its access token). */
  acceptSignedIn: (token: string, accessToken: string) => authCall<T.InviteAccepted>('accept-invite', { token }, accessToken),
};

/** Local development only (MAIL_SENDER = "outbox"): the mail that was not sent. */
export const outboxApi = {
  messages: async () => {
    const res = await fetch('/console/v1/outbox');
    if (!res.ok) throw new Error(`The outbox answered HTTP ${res.status}`);
    return (await res.json()) as T.List<T.OutboxMessage>;
  },
};

/** The signed-in user, with their organizations and sessions; the fleet (operators). */
export const accountApi = {
  me: () => callJson<T.Me>('/me'),
  sessions: () => callJson<T.List<T.ConsoleSession>>('/me/sessions'),
  endSession: (id: string) => callJson<T.Message>(`/me/sessions/${seg(id)}`, 'DELETE'),
  endAllSessions: () => callJson<T.Message>('/me/sessions', 'DELETE'),
  fleet: () => callJson<T.Fleet>('/fleet'),
};

/** One organization's records. */
export function orgApi(orgId: string) {
  const at = (path: string) => `/orgs/${seg(orgId)}${path}`;
  const webhook = (id: string) => at(`/webhooks/${seg(id)}`);
  const proof = (id: string) => at(`/proofs/${seg(id)}`);
  return {
    projects: (query: URLSearchParams) => callJson<T.Page<T.ProjectRecord>>(at(`/projects?${query}`)),
    project: (id: string) => callJson<T.ProjectRecord>(at(`/projects/${seg(id)}`)),
    programs: (query: URLSearchParams) => callJson<T.Page<T.ProgramRecord>>(at(`/programs?${query}`)),
    program: (id: string) => callJson<T.ProgramDetail>(at(`/programs/${seg(id)}`)),
    executions: (query: URLSearchParams) => callJson<T.Page<T.ExecutionRecord>>(at(`/executions?${query}`)),
    execution: (id: string) => callJson<T.ConsoleExecution>(at(`/executions/${seg(id)}`)),

    proofs: (query: URLSearchParams) => callJson<T.Page<T.ConsoleProof>>(at(`/proofs?${query}`)),
    proof: (id: string) => callJson<T.ProofDetail>(proof(id)),
    cancelProof: (id: string) => callJson<T.CancelAnswer>(proof(id) + '/cancel', 'POST'),
    /** Deletes the proof's files; the record stays as a tombstone (README "Deleting records and retention"). */
    deleteProof: (id: string) => callJson<T.ConsoleProof>(proof(id), 'DELETE'),
    deleteProgram: (id: string) => callJson<T.ProgramRecord>(at(`/programs/${seg(id)}`), 'DELETE'),
    /** The proof job's log from a byte offset, and where the next read starts. */
    proofLog: async (id: string, offset: number) => {
      const res = await call(proof(id) + `/logs?offset=${offset}`);
      return { text: await res.text(), next: Number(res.headers.get('x-log-next-offset') || offset) };
    },
    proofFile: async (id: string, kind: string) => (await call(proof(id) + `/proof/${seg(kind)}`)).blob(),

    apiKeys: () => callJson<T.List<T.ApiKey>>(at('/api-keys')),
    createApiKey: (scope: T.ApiKey['scope'], name?: string) =>
      callJson<T.CreatedApiKey>(at('/api-keys'), 'POST', name ? { name, scope } : { scope }),
    revokeApiKey: (id: string) => callJson<T.Message>(at(`/api-keys/${seg(id)}`), 'DELETE'),

    webhooks: (query: URLSearchParams) => callJson<T.Page<T.WebhookEndpoint>>(at(`/webhooks?${query}`)),
    createWebhook: (body: T.CreateWebhook) => callJson<T.WebhookEndpointWithSecret>(at('/webhooks'), 'POST', body),
    webhook: (id: string) => callJson<T.WebhookEndpoint>(webhook(id)),
    updateWebhook: (id: string, body: T.UpdateWebhook) => callJson<T.WebhookEndpoint>(webhook(id), 'PATCH', body),
    deleteWebhook: (id: string) => callJson<T.Message>(webhook(id), 'DELETE'),
    rotateWebhookSecret: (id: string) => callJson<T.WebhookEndpointWithSecret>(webhook(id) + '/rotate-secret', 'POST'),
    testWebhook: (id: string) => callJson<T.WebhookDelivery>(webhook(id) + '/test', 'POST'),
    deliveries: (id: string, query: URLSearchParams) => callJson<T.Page<T.WebhookDelivery>>(webhook(id) + `/deliveries?${query}`),
    redeliver: (id: string, deliveryId: string) =>
      callJson<T.WebhookDelivery>(webhook(id) + `/deliveries/${seg(deliveryId)}/redeliver`, 'POST'),

    members: () => callJson<T.List<T.Member>>(at('/members')),
    setRole: (userId: string, role: T.Role) => callJson<T.Message>(at(`/members/${seg(userId)}`), 'PATCH', { role }),
    removeMember: (userId: string) => callJson<T.Message>(at(`/members/${seg(userId)}`), 'DELETE'),
    invites: () => callJson<T.List<T.Invite>>(at('/invites')),
    createInvite: (email: string, role: T.Role) => callJson<T.CreatedInvite>(at('/invites'), 'POST', { email, role }),
    revokeInvite: (id: string) => callJson<T.Message>(at(`/invites/${seg(id)}`), 'DELETE'),
    audit: (query: URLSearchParams) => callJson<T.Page<T.AuditEntry>>(at(`/audit?${query}`)),

    usage: (query: URLSearchParams) => callJson<T.Usage>(at(`/usage?${query}`)),
    budget: () => callJson<T.Budget>(at('/budget')),
    setBudget: (body: T.BudgetBody) => callJson<T.Budget>(at('/budget'), 'PUT', body),
    orgLimits: () => callJson<T.OrgLimits>(at('/limits')),
    setOrgLimits: (body: T.OrgLimitsBody) => callJson<T.OrgLimits>(at('/limits'), 'PUT', body),
    programEstimate: (id: string) => callJson<T.ProgramEstimate>(at(`/programs/${seg(id)}/estimate`)),
  };
}

export type OrgApi = ReturnType<typeof orgApi>;
