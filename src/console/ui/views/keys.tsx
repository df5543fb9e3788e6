// API keys: create one (shown once), list and revoke.
import { MAX_API_KEY_NAME_LENGTH } from '../../../lib/limits.ts';
import type { ApiKey } from '../api-types.ts';
import { formatDate, NONE } from '../format.ts';
import { type Column, DataTable } from '../table.tsx';
import { ShownOnce } from '../widgets.tsx';

const keyColumns = (onRevoke?: (key: ApiKey) => void): Column<ApiKey>[] => [
  { header: 'Name', cell: (k) => k.name },
  { header: 'Prefix', cell: (k) => <code>{k.prefix ? `${k.prefix}…` : NONE}</code> },
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
  onCreate?: (event: Event) => void;
  onCopy?: () => void;
  onRevoke?: (key: ApiKey) => void;
}

export const KeysView = ({ keys, created, onCreate, onCopy, onRevoke }: KeysViewProps) => (
  <>
    <form id="key-form" class="filters card" onSubmit={onCreate}>
      <label>
        Name (optional)
        <input type="text" name="name" maxlength={MAX_API_KEY_NAME_LENGTH} placeholder="e.g. CI" />
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
    <DataTable id="keys" caption="API keys" columns={keyColumns(onRevoke)} rows={keys} empty="No active keys." />
  </>
);
