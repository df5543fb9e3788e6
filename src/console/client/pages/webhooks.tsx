// Webhook endpoints: add one (its secret shown once); an endpoint's page with its
// actions and deliveries, followed while any is pending.
import { useState } from 'hono/jsx/dom';
import type { Organization, Page, WebhookDelivery, WebhookEndpoint } from '../../ui/api-types.ts';
import { may, WEBHOOK_EVENTS } from '../../ui/states.ts';
import { links } from '../../ui/site.ts';
import { WebhooksView, WebhookView } from '../../ui/views/webhooks.tsx';
import { attempt, say, setHeading } from '../chrome.ts';
import { copyText, field, formOf, formQuery, pathId } from '../dom.ts';
import type { OrgApi } from '../endpoints.ts';
import { firstPage, useInterval, usePaged } from '../hooks.ts';
import { ask } from '../confirm.tsx';
import type { SignedInPage } from '../signed-in.ts';

/** How often an endpoint's page reloads its deliveries while one is pending. */
const PENDING_POLL_MS = 2000;

/** The events an EventChoice asks for: the ticked ones, or null for every event. */
function chosenEvents(form: HTMLFormElement) {
  if (field(form, 'scope') === 'all') return null;
  const ticked = new FormData(form).getAll('events');
  return WEBHOOK_EVENTS.filter((e) => ticked.includes(e));
}

function WebhooksPage({ api, org, initial }: { api: OrgApi; org: Organization; initial: Page<WebhookEndpoint> }) {
  const endpoints = usePaged(initial, api.webhooks);
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const create = (event: Event) => {
    event.preventDefault();
    const form = formOf(event);
    const description = field(form, 'description');
    const events = chosenEvents(form);
    // A new endpoint gets every event when the body names none.
    void attempt(async () => {
      const created = await api.createWebhook({
        url: field(form, 'url'),
        ...(description ? { description } : {}),
        ...(events ? { events } : {}),
      });
      setSecret(created.secret);
      form.reset();
      say(`Endpoint added: ${created.url}.`);
      await endpoints.go(1);
    });
  };
  return (
    <WebhooksView
      endpoints={endpoints.list}
      canManage={may(org.role, 'webhooks.manage')}
      secret={secret}
      onCreate={create}
      onCopy={() => void copyText(secret)}
      onPage={endpoints.onPage}
    />
  );
}

export const webhooks: SignedInPage = async ({ api, org }) => {
  if (!may(org.role, 'webhooks.manage')) say(`Owners and admins add and change webhook endpoints; you are a ${org.role} of ${org.name}.`);
  return <WebhooksPage api={api} org={org} initial={await api.webhooks(firstPage())} />;
};

interface WebhookPageProps {
  api: OrgApi;
  org: Organization;
  initial: WebhookEndpoint;
  deliveries: Page<WebhookDelivery>;
}

function WebhookPage({ api, org, initial, deliveries }: WebhookPageProps) {
  const id = initial.id;
  const [endpoint, setEndpoint] = useState(initial);
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const list = usePaged(deliveries, (query) => api.deliveries(id, query));
  const show = (next: WebhookEndpoint) => {
    setEndpoint(next);
    setHeading(`Webhook ${next.url}`);
  };

  // While something is on its way, follow it.
  useInterval(() => {
    if (list.list.items.some((d) => d.status === 'pending')) void attempt(() => list.go(1));
  }, PENDING_POLL_MS);

  const save = (event: Event) => {
    event.preventDefault();
    const form = formOf(event);
    const change = { url: field(form, 'url'), description: field(form, 'description'), events: chosenEvents(form) };
    void attempt(async () => show(await api.updateWebhook(id, change)), 'Endpoint saved.');
  };
  const rotate = async () => {
    const yes = await ask({
      title: `Rotate the signing secret of ${endpoint.url}?`,
      body: <p>A new secret is shown once. For 24 hours deliveries are signed with both; after that only the new one verifies.</p>,
      action: 'Rotate secret',
    });
    if (!yes) return;
    await attempt(async () => {
      const { secret: rotated, ...record } = await api.rotateWebhookSecret(id);
      setSecret(rotated);
      show(record);
    });
  };
  const remove = async () => {
    const yes = await ask({
      title: `Delete the webhook endpoint ${endpoint.url}?`,
      body: <p>It gets no more events and its pending deliveries are not sent.</p>,
      action: 'Delete endpoint',
      irreversible: true,
    });
    if (!yes) return;
    await attempt(async () => {
      await api.deleteWebhook(id);
      location.assign(links.webhooks);
    });
  };
  const redeliver = (delivery: WebhookDelivery) =>
    void attempt(async () => {
      await api.redeliver(id, delivery.id);
      say(`Redelivering ${delivery.id}.`);
      await list.go(1);
    });

  return (
    <WebhookView
      endpoint={endpoint}
      deliveries={list.list}
      canManage={may(org.role, 'webhooks.manage')}
      secret={secret}
      onCopy={() => void copyText(secret)}
      onSendTest={() =>
        void attempt(async () => {
          await api.testWebhook(id);
          await list.go(1);
        }, 'Test event queued.')
      }
      onToggle={() =>
        void attempt(
          async () => show(await api.updateWebhook(id, { disabled: !endpoint.disabled })),
          endpoint.disabled ? 'Endpoint enabled.' : 'Endpoint disabled.',
        )
      }
      onRotate={() => void rotate()}
      onDelete={() => void remove()}
      onSave={save}
      onStatusFilter={(event) => {
        const filters = formQuery(formOf(event));
        void attempt(() => list.refilter(filters));
      }}
      onRefresh={() => void attempt(() => list.go(1))}
      onRedeliver={redeliver}
      onPage={list.onPage}
    />
  );
}

export const webhook: SignedInPage = async ({ api, org }) => {
  const id = pathId();
  const [endpoint, deliveries] = await Promise.all([api.webhook(id), api.deliveries(id, firstPage())]);
  setHeading(`Webhook ${endpoint.url}`);
  return <WebhookPage api={api} org={org} initial={endpoint} deliveries={deliveries} />;
};
