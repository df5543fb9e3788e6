// API keys: create (shown once), revoke.
import { useState } from 'hono/jsx/dom';
import type { ApiKey, Organization } from '../../ui/api-types.ts';
import { scopesFor, type KeyScope } from '../../ui/states.ts';
import { shownText } from '../../ui/format.ts';
import { KeysView } from '../../ui/views/keys.tsx';
import { attempt, say } from '../chrome.ts';
import { copyText, field, formOf } from '../dom.ts';
import type { OrgApi } from '../endpoints.ts';
import { ask } from '../confirm.tsx';
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
  const revoke = async (key: ApiKey) => {
    const named = key.name ? ` “${shownText(key.name)}”` : '';
    const yes = await ask({
      title: `Revoke the API key${named} of ${shownText(key.owner)} (${key.prefix ? `${key.prefix}…` : key.id})?`,
      body: <p>Every call made with it is refused from now on, including by programs and CI jobs that use it.</p>,
      action: 'Revoke key',
      irreversible: true,
    });
    if (!yes) return;
    await attempt(async () => {
      await api.revokeApiKey(key.id);
      say('Key revoked.');
      await reload();
    });
  };
  return (
    <KeysView
      keys={keys}
      created={created}
      scopes={scopes}
      base={location.origin}
      onCreate={create}
      onCopy={() => void copyText(created)}
      onRevoke={(key) => void revoke(key)}
    />
  );
}

export const keys: SignedInPage = async ({ api, org }) => <KeysPage api={api} org={org} initial={(await api.apiKeys()).items} />;
