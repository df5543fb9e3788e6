// API keys: create one with a scope (shown once), list them with their scopes, revoke.
import { MAX_API_KEY_NAME_LENGTH } from '../../../lib/limits.ts';
import { KEY_SCOPES, type KeyScope } from '../states.ts';
import type { ApiKey } from '../api-types.ts';
import { formatDate, NONE } from '../format.ts';
import { type Column, DataTable } from '../table.tsx';
import { tryKey } from '../snippets.ts';
import { EmptyState, ShownOnce, Snippet } from '../widgets.tsx';

const keyColumns = (onRevoke?: (key: ApiKey) => void): Column<ApiKey>[] => [
  { header: 'Name', cell: (k) => k.name ?? NONE },
  { header: 'Owner', cell: (k) => k.owner },
  { header: 'Prefix', cell: (k) => <code>{k.prefix ? `${k.prefix}…` : NONE}</code> },
  { header: 'Scope', cell: (k) => <span title={KEY_SCOPES[k.scope].covers}>{k.scope}</span> },
  { header: 'Created', cell: (k) => formatDate(k.created_at) },
  { header: 'Last used', cell: (k) => formatDate(k.last_used_at) },
  {
    header: '',
    cell: (k) => (
      <button type="button" class="danger" aria-label={`Revoke key ${k.prefix || k.id}`} onClick={() => onRevoke?.(k)}>
        Revoke
      </button>
    ),
  },
];

export interface KeysViewProps {
  keys?: ApiKey[];
  /** The key just created, shown this once. */
  created?: string;
  /** The scopes the signed-in role may give a key (all of them until known), the first the default. */
  scopes?: readonly KeyScope[];
  /** This service's address, for the commands that try the key just made. */
  base?: string;
  onCreate?: (event: Event) => void;
  onCopy?: () => void;
  onRevoke?: (key: ApiKey) => void;
}

const SCOPE_ORDER = Object.keys(KEY_SCOPES) as KeyScope[];

export const KeysView = ({ keys, created, scopes = SCOPE_ORDER, base, onCreate, onCopy, onRevoke }: KeysViewProps) => (
  <>
    <form id="key-form" class="filters card" onSubmit={onCreate}>
      <label>
        Name (optional)
        <input type="text" name="name" maxlength={MAX_API_KEY_NAME_LENGTH} placeholder="e.g. CI" />
      </label>
      <label>
        Scope
        <select name="scope">
          {scopes.map((s) => (
            <option value={s} title={KEY_SCOPES[s].covers}>
              {s}
            </option>
          ))}
        </select>
      </label>
      <button type="submit">Create API key</button>
    </form>
    <ShownOnce
      id="new-key"
      lead={
        <>
          <strong>Copy this key now:</strong> it is not shown again.
        </>
      }
      value={created}
      onCopy={onCopy}
    />
    {created && base && <Snippet label="Try it, then point cargo axiom at this service" code={tryKey(base, created)} />}
    <DataTable
      id="keys"
      caption="API keys"
      columns={keyColumns(onRevoke)}
      rows={keys}
      empty={
        <EmptyState id="keys-empty" title="No API keys yet.">
          <p>
            Programs are registered and proved with an API key: create one above (it is shown once), then use it with curl or{' '}
            <code>cargo axiom</code>.
          </p>
        </EmptyState>
      }
    />
  </>
);
