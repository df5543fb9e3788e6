// Webhook endpoints: the list with the form that adds one, and a page per endpoint with
// its actions, its settings and its deliveries.
import { MAX_WEBHOOK_DESCRIPTION, MAX_WEBHOOK_URL_LENGTH } from '../../../lib/limits.ts';
import type { Page, WebhookDelivery, WebhookEndpoint } from '../api-types.ts';
import { eventsText, formatDate, NONE } from '../format.ts';
import { links } from '../site.ts';
import { WEBHOOK_DELIVERY_STATUSES } from '../states.ts';
import { type Column, DataTable, Pager } from '../table.tsx';
import { EmptyState, EventChoice, type Fact, Facts, ShownOnce, StateBadge } from '../widgets.tsx';

type Paging = { onPage?: (page: number) => void };
const noSubmit = (event: Event) => event.preventDefault();

/** Whether an endpoint is on. */
const EndpointStatus = ({ endpoint }: { endpoint: WebhookEndpoint }) => <StateBadge state={endpoint.disabled ? 'disabled' : 'enabled'} />;

const endpointColumns: Column<WebhookEndpoint>[] = [
  { header: 'URL', cell: (w) => <a href={links.webhook(w.id)}>{w.url}</a> },
  { header: 'Events', cell: (w) => eventsText(w.events) },
  { header: 'Status', cell: (w) => <EndpointStatus endpoint={w} /> },
  { header: 'Created', cell: (w) => formatDate(w.created_at) },
  { header: 'Created by', cell: (w) => w.created_by },
];

export interface WebhooksViewProps extends Paging {
  endpoints?: Page<WebhookEndpoint>;
  /** Owners and admins add endpoints; the form stays hidden for everyone else. */
  canManage?: boolean;
  /** The signing secret of the endpoint just added, shown this once. */
  secret?: string;
  onCreate?: (event: Event) => void;
  onCopy?: () => void;
}

export const WebhooksView = ({ endpoints, canManage, secret, onCreate, onCopy, onPage }: WebhooksViewProps) => (
  <>
    <p class="lead">
      Signed HTTP POSTs (Standard Webhooks) when programs, proofs, executions and verifications finish. Verify each with your endpoint’s
      secret; deduplicate on <code>webhook-id</code>.
    </p>
    <form id="webhook-form" class="card stack" hidden={!canManage} onSubmit={onCreate}>
      <label>
        Endpoint URL
        <input type="url" name="url" required maxlength={MAX_WEBHOOK_URL_LENGTH} placeholder="https://example.com/hooks/proving" />
      </label>
      <label>
        Description (optional)
        <input type="text" name="description" maxlength={MAX_WEBHOOK_DESCRIPTION} />
      </label>
      <EventChoice prefix="new" />
      <button type="submit">Add endpoint</button>
    </form>
    <ShownOnce
      id="new-secret"
      lead={
        <>
          <strong>Copy this signing secret now:</strong> it is not shown again (rotating it makes a new one).
        </>
      }
      value={secret}
      onCopy={onCopy}
    />
    <DataTable
      id="webhooks"
      caption="Webhook endpoints"
      columns={endpointColumns}
      rows={endpoints?.items}
      empty={
        <EmptyState id="webhooks-empty" title="No webhook endpoints yet.">
          <p>
            {canManage
              ? 'Add one above to be told when proofs, programs and executions finish, instead of polling for them.'
              : 'Owners and admins add endpoints; until one does, poll the API for the state of proofs.'}
          </p>
        </EmptyState>
      }
    />
    <Pager id="webhooks-pager" pagination={endpoints?.pagination} onGo={onPage} />
  </>
);

const endpointFacts = (w: WebhookEndpoint): Fact[] => [
  ['Status', <EndpointStatus endpoint={w} />],
  ['Why disabled', w.disabled_reason || NONE],
  ['URL', <code>{w.url}</code>],
  ['Events', eventsText(w.events)],
  ['Description', w.description || NONE],
  ['Id', <code>{w.id}</code>],
  ['Created', `${formatDate(w.created_at)} by ${w.created_by}`],
  ['Changed', formatDate(w.updated_at)],
  ['Previous secret signs until', formatDate(w.previous_secret_valid_until)],
];

/** Each attempt with its answer; before the first, why none was made or when it is due. */
function Attempts({ delivery: d }: { delivery: WebhookDelivery }) {
  if (!d.attempts.length) return <>{d.error || (d.status === 'pending' ? `due ${formatDate(d.next_attempt_at)}` : NONE)}</>;
  return (
    <ol class="attempts">
      {d.attempts.map((a) => (
        <li>
          {`#${a.attempt} ${formatDate(a.attempted_at)} · `}
          <StateBadge state={a.error ? 'failed' : 'delivered'} label={a.status_code === null ? 'no answer' : `HTTP ${a.status_code}`} />
          {` · ${a.latency_ms} ms`}
          {a.error ? ` · ${a.error}` : ''}
          {a.response_excerpt ? <div class="excerpt">{a.response_excerpt}</div> : ''}
        </li>
      ))}
    </ol>
  );
}

const deliveryColumns = (onRedeliver?: (delivery: WebhookDelivery) => void): Column<WebhookDelivery>[] => [
  {
    header: 'Event',
    cell: (d) => (
      <>
        <code>{d.type}</code>
        <div class="excerpt mono">{d.id}</div>
      </>
    ),
  },
  { header: 'Status', cell: (d) => <StateBadge state={d.status} /> },
  { header: 'Created', cell: (d) => formatDate(d.created_at) },
  { header: 'Attempts', cell: (d) => <Attempts delivery={d} /> },
  {
    header: '',
    cell: (d) =>
      onRedeliver && d.status !== 'pending' ? (
        <button type="button" class="ghost" aria-label={`Redeliver ${d.type} ${d.id}`} onClick={() => onRedeliver(d)}>
          Redeliver
        </button>
      ) : (
        ''
      ),
  },
];

export interface WebhookViewProps extends Paging {
  endpoint?: WebhookEndpoint;
  deliveries?: Page<WebhookDelivery>;
  /** Owners and admins see the actions and the edit form, and may redeliver. */
  canManage?: boolean;
  /** The new signing secret after a rotation, shown this once. */
  secret?: string;
  onCopy?: () => void;
  onSendTest?: () => void;
  onToggle?: () => void;
  onRotate?: () => void;
  onDelete?: () => void;
  onSave?: (event: Event) => void;
  onStatusFilter?: (event: Event) => void;
  onRefresh?: () => void;
  onRedeliver?: (delivery: WebhookDelivery) => void;
}

export const WebhookView = (props: WebhookViewProps) => {
  const { endpoint, canManage } = props;
  return (
    <>
      <Facts id="webhook-facts" facts={endpoint && endpointFacts(endpoint)} />
      <div class="actions" id="webhook-actions" hidden={!canManage}>
        <button type="button" id="send-test" onClick={props.onSendTest}>
          Send test event
        </button>
        <button type="button" id="toggle-disabled" class="ghost" onClick={props.onToggle}>
          {endpoint?.disabled ? 'Enable' : 'Disable'}
        </button>
        <button type="button" id="rotate-secret" class="ghost" onClick={props.onRotate}>
          Rotate secret
        </button>
        <button type="button" id="delete-webhook" class="danger" onClick={props.onDelete}>
          Delete endpoint
        </button>
      </div>
      <ShownOnce
        id="new-secret"
        lead={
          <>
            <strong>Copy the new signing secret now:</strong> it is not shown again. For 24 hours deliveries are signed with the previous
            secret too.
          </>
        }
        value={props.secret}
        onCopy={props.onCopy}
      />
      <details id="webhook-edit-box" hidden={!canManage}>
        <summary>Edit</summary>
        <form id="webhook-edit" class="card stack" onSubmit={props.onSave}>
          <label>
            Endpoint URL
            <input type="url" name="url" required maxlength={MAX_WEBHOOK_URL_LENGTH} value={endpoint?.url} />
          </label>
          <label>
            Description
            <input type="text" name="description" maxlength={MAX_WEBHOOK_DESCRIPTION} value={endpoint?.description} />
          </label>
          <EventChoice prefix="edit" events={endpoint?.events} />
          <button type="submit">Save</button>
        </form>
      </details>
      <h2>Deliveries</h2>
      <form id="filters" class="filters" onChange={props.onStatusFilter} onSubmit={noSubmit}>
        <label>
          Status
          <select name="status">
            <option value="">Any</option>
            {WEBHOOK_DELIVERY_STATUSES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </label>
        <button type="button" id="refresh" class="ghost" onClick={props.onRefresh}>
          Refresh
        </button>
      </form>
      <DataTable
        id="deliveries"
        caption="Deliveries, newest first"
        columns={deliveryColumns(canManage ? props.onRedeliver : undefined)}
        rows={props.deliveries?.items}
        empty={
          <EmptyState id="deliveries-empty" title="No deliveries yet.">
            <p>
              {canManage ? 'Send a test event (above) to see one arrive, or finish a proof.' : 'Deliveries show here as events happen.'}
            </p>
          </EmptyState>
        }
        rowAttributes={(d) => ({ 'data-delivery': d.id })}
      />
      <Pager id="deliveries-pager" pagination={props.deliveries?.pagination} onGo={props.onPage} />
    </>
  );
};
