// API keys: create (shown once), revoke.
import { useState } from 'hono/jsx/dom';
import type { ApiKey, Organization } from '../../ui/api-types.ts';
import { scopesFor, type KeyScope } from '../../ui/states.ts';
import { shownText } from '../../ui/format.ts';
import { KeysView } from '../../ui/views/keys.tsx';
import { attempt, say } from '../chrome.ts';
import { copyText, field, formOf } from '../dom.ts';
import type { OrgApi } from '../endpoints.ts';
import type { SignedInPage } from '../signed-in.ts';

function KeysPage({ api, org, initial }: { api: OrgApi; org: Organization; initial: ApiKey[] }) {
  // The scopes this role may give, as the server checks them (src/auth/permissions.ts).
  const scopes = scopesFor(org.role);
  const [keys, setKeys] = useState(initial);
  const [created, setCreated] = useState<string | undefined>(undefined);
  const reload = async () => setKeys((await api.apiKeys()).items);

  const create = (event: Event) => {
    event.preventDefault();
    const form = formOf(event);
    void attempt(async () => {
      const scope = scopes.find((s): s is KeyScope => s === field(form, 'scope'));
      if (!scope) return;
      setCreated((await api.createApiKey(scope, field(form, 'name') || undefined)).key);
      form.reset();
      say('Key created.');
      await reload();
    });
  };
  const revoke = (key: ApiKey) => {
    const named = key.name ? ` "${shownText(key.name)}"` : '';
    if (!confirm(`Revoke the key${named} of ${shownText(key.owner)} (${key.prefix || key.id})? Calls with it fail at once.`)) return;
    void attempt(async () => {
      await api.revokeApiKey(key.id);
      say('Key revoked.');
      await reload();
    });
  };
  return (
    <KeysView keys={keys} created={created} scopes={scopes} onCreate={create} onCopy={() => void copyText(created)} onRevoke={revoke} />
  );
}

export const keys: SignedInPage = async ({ api, org }) => <KeysPage api={api} org={org} initial={(await api.apiKeys()).items} />;
