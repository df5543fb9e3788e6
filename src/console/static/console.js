// The console's client script: signs in, keeps the access token in memory only (the
// refresh token is an HttpOnly cookie it never sees), and fills each server-rendered
// page from the /console/v1 API. Everything is written with textContent: no HTML from
// data is ever parsed.
'use strict';

const API = '/console/v1';
const CSRF = { 'X-Console-CSRF': '1' };
const FINAL_STATES = ['Succeeded', 'Failed', 'Canceled'];
const PROOF_STEPS = ['Queued', 'Executing', 'Executed', 'AppProving', 'AppProvingDone', 'PostProcessing', 'Succeeded'];
const POLL_MS = 1000;

const $ = (sel, root = document) => root.querySelector(sel);
const page = document.body.dataset.page;

/** h('a', {href}, 'text', child...) with text children as text nodes. */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null) el.append(c instanceof Node ? c : String(c));
  return el;
}

function status(text, isError) {
  const el = $('#status');
  el.textContent = text || '';
  el.classList.toggle('error', Boolean(isError));
}

const fmtDate = (iso) => (iso ? new Date(iso).toLocaleString() : '—');
const fmtUsd = (micro) => (micro === null || micro === undefined ? '—' : (micro / 1e6).toFixed(4));
const fmtNum = (n) => (n === null || n === undefined ? '—' : Number(n).toLocaleString());
const stateBadge = (s) => h('span', { class: `state ${s}` }, s);
const short = (id) => id.slice(0, 8);

// ---------------------------------------------------------------------------
// Session

const session = { token: null, user: null, refreshing: null };

/** Trades the refresh cookie for an access token; one refresh at a time (the cookie rotates). */
function refresh() {
  session.refreshing ??= fetch(`${API}/auth/refresh`, { method: 'POST', headers: CSRF, credentials: 'same-origin' })
    .then(async (res) => {
      if (!res.ok) return false;
      const body = await res.json();
      session.token = body.access_token;
      session.user = body.user;
      return true;
    })
    .finally(() => (session.refreshing = null));
  return session.refreshing;
}

function toSignIn() {
  const next = location.pathname + location.search;
  location.assign(`/console/signin?next=${encodeURIComponent(next)}`);
}

class ApiError extends Error {
  constructor(status, detail) {
    super(typeof detail === 'string' ? detail : Array.isArray(detail) ? detail.map((d) => `${d.loc.slice(1).join('.')}: ${d.msg}`).join('; ') : `HTTP ${status}`);
    this.status = status;
  }
}

/** A /console/v1 call with the bearer token; refreshes once on 401. Returns the Response. */
async function call(path, opts = {}, retried = false) {
  const headers = { ...(opts.headers || {}), authorization: `Bearer ${session.token}` };
  if (opts.json !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(API + path, { method: opts.method || 'GET', headers, body: opts.json !== undefined ? JSON.stringify(opts.json) : undefined });
  if (res.status === 401 && !retried) {
    if (await refresh()) return call(path, opts, true);
    toSignIn();
    throw new ApiError(401, 'Signed out');
  }
  if (!res.ok) {
    let detail;
    try {
      detail = (await res.json()).detail;
    } catch {}
    throw new ApiError(res.status, detail);
  }
  return res;
}
const get = async (path) => (await call(path)).json();
const send = async (method, path, json) => (await call(path, { method, json })).json();

// ---------------------------------------------------------------------------
// Organization

let org = null;
const orgPath = (p) => `/orgs/${encodeURIComponent(org.id)}${p}`;

async function loadOrgs() {
  const me = await get('/me');
  session.user = me;
  if (!me.organizations.length) {
    status('You are not a member of any organization yet.', true);
    return false;
  }
  const saved = localStorage.getItem('console-org');
  org = me.organizations.find((o) => o.id === saved) || me.organizations[0];
  const select = $('#org-select');
  if (select) {
    select.replaceChildren(...me.organizations.map((o) => h('option', { value: o.id, selected: o.id === org.id }, `${o.name} (${o.role})`)));
    select.addEventListener('change', () => {
      localStorage.setItem('console-org', select.value);
      location.reload();
    });
  }
  if (me.is_operator) $('#nav-fleet')?.removeAttribute('hidden');
  return true;
}

// ---------------------------------------------------------------------------
// Shared widgets

function fillTable(id, rows, empty = 'Nothing here yet.') {
  const body = $(`#${id} tbody`);
  const cols = $(`#${id} thead tr`).children.length;
  body.replaceChildren(...(rows.length ? rows : [h('tr', {}, h('td', { colspan: cols }, empty))]));
}

const cell = (content, cls) => h('td', { class: cls }, content);

/** A paged list bound to a pager: load(page) fetches and renders, the buttons move. */
function pager(id, load) {
  const nav = $(`#${id}`);
  let current = 1;
  let pages = 1;
  const go = async (p) => {
    const result = await load(p);
    current = result.pagination.page;
    pages = Math.max(1, result.pagination.pages);
    nav.querySelector('span').textContent = `Page ${current} of ${pages} · ${result.pagination.total} in all`;
    nav.querySelector('[data-dir="-1"]').disabled = current <= 1;
    nav.querySelector('[data-dir="1"]').disabled = current >= pages;
  };
  nav.addEventListener('click', (e) => {
    const dir = Number(e.target.dataset?.dir || 0);
    if (dir) go(current + dir).catch(fail);
  });
  return go;
}

function formQuery(form) {
  const q = new URLSearchParams();
  for (const [k, v] of new FormData(form)) if (v) q.set(k, String(v));
  return q;
}

function debounce(fn, ms = 250) {
  let t;
  return (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
}

function copyButton(button, text) {
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text());
      status('Copied to the clipboard.');
    } catch {
      status('Select the text and copy it.');
    }
  });
}

/** Saves a proof file: fetched with the bearer token (a plain link could not send it), then handed to the browser. */
async function download(proofId, kind) {
  const res = await call(orgPath(`/proofs/${proofId}/proof/${kind}`));
  const url = URL.createObjectURL(await res.blob());
  const a = h('a', { href: url, download: `${kind}-proof-${proofId}.json`, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

function fail(err) {
  status(err.message || String(err), true);
}

function facts(id, pairs) {
  $(`#${id}`).replaceChildren(...pairs.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v ?? '—')]));
}

const pathId = () => decodeURIComponent(location.pathname.split('/').pop());

// Webhook endpoints: which events, and whether they are on.
const eventsText = (events) => (events ? events.join(', ') : 'all events');
const endpointBadge = (w) => h('span', { class: `state ${w.disabled ? 'disabled' : 'enabled'}` }, w.disabled ? 'disabled' : 'enabled');

/** The events part of a body from an EventChoice fieldset: none (all), or the ticked ones (`null` for all, when changing). */
function chosenEvents(form, changing = false) {
  if (form.querySelector('input[name="scope"]:checked').value === 'all') return changing ? { events: null } : {};
  return { events: [...form.querySelectorAll('input[name="events"]:checked')].map((c) => c.value) };
}

function setEvents(form, events) {
  form.querySelector(`input[name="scope"][value="${events ? 'some' : 'all'}"]`).checked = true;
  for (const c of form.querySelectorAll('input[name="events"]')) c.checked = !!events && events.includes(c.value);
}

// ---------------------------------------------------------------------------
// Pages anyone may open

const openPages = {
  async signin() {
    const form = $('#signin-form');
    const email = new URLSearchParams(location.search).get('email');
    if (email) form.email.value = email;
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const button = form.querySelector('button');
      button.disabled = true;
      try {
        const res = await fetch(`${API}/auth/signin`, {
          method: 'POST',
          headers: { ...CSRF, 'content-type': 'application/json' },
          body: JSON.stringify({ email: form.email.value, password: form.password.value }),
        });
        if (!res.ok) {
          const body = await res.json().catch(() => ({}));
          throw new ApiError(res.status, body.detail);
        }
        const next = new URLSearchParams(location.search).get('next');
        // Only paths of this console: never an absolute URL from the query string.
        location.assign(next && next.startsWith('/console/') && !next.startsWith('//') ? next : '/console/projects');
      } catch (err) {
        fail(err);
        button.disabled = false;
      }
    });
  },

  async 'set-password'() {
    const token = new URLSearchParams(location.hash.slice(1)).get('token');
    // The token leaves the address bar (and the history) at once.
    history.replaceState(null, '', location.pathname);
    const form = $('#password-form');
    if (!token) {
      form.hidden = true;
      return status('This link has no token: ask your operator for a new one.', true);
    }
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      try {
        const res = await fetch(`${API}/auth/set-password`, {
          method: 'POST',
          headers: { ...CSRF, 'content-type': 'application/json' },
          body: JSON.stringify({ token, password: form.password.value }),
        });
        const body = await res.json();
        if (!res.ok) throw new ApiError(res.status, body.detail);
        location.assign(`/console/signin?email=${encodeURIComponent(body.email)}`);
      } catch (err) {
        fail(err);
      }
    });
  },

  async invite() {
    const token = new URLSearchParams(location.hash.slice(1)).get('token');
    history.replaceState(null, '', location.pathname);
    if (!token) return status('This link has no token: ask for a new invitation.', true);
    const post = async (path, body) => {
      const res = await fetch(`${API}/auth/${path}`, { method: 'POST', headers: { ...CSRF, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const json = await res.json();
      if (!res.ok) throw new ApiError(res.status, json.detail);
      return json;
    };
    try {
      const invite = await post('invite', { token });
      $('#invite-summary').textContent = `${invite.email} is invited to ${invite.org_name} as ${invite.role}.`;
      const form = $('#invite-form');
      form.hidden = false;
      if (invite.has_account) {
        $('#invite-name').hidden = true;
        $('#invite-password-label').textContent = 'Your current password';
      } else {
        $('#invite-password-label').textContent = 'Choose a password (at least 10 characters)';
      }
      form.addEventListener('submit', async (e) => {
        e.preventDefault();
        try {
          const joined = await post('accept-invite', { token, password: form.password.value, name: form.name.value || undefined });
          location.assign(`/console/signin?email=${encodeURIComponent(joined.email)}`);
        } catch (err) {
          fail(err);
        }
      });
    } catch (err) {
      fail(err);
    }
  },
};

// ---------------------------------------------------------------------------
// Signed-in pages

const pages = {
  async projects() {
    const form = $('#filters');
    const go = pager('projects-pager', async (p) => {
      const q = formQuery(form);
      q.set('page', p);
      const result = await get(orgPath(`/projects?${q}`));
      fillTable(
        'projects',
        result.items.map((pr) =>
          h(
            'tr',
            {},
            cell(h('a', { href: `/console/projects/${pr.id}` }, pr.name)),
            cell(fmtNum(pr.program_count), 'num'),
            cell(fmtNum(pr.total_proofs_run), 'num'),
            cell(fmtDate(pr.last_active_at)),
            cell(pr.created_by),
          ),
        ),
        'No projects yet: register a program with the public API.',
      );
      return result;
    });
    form.addEventListener('input', debounce(() => go(1).catch(fail)));
    form.addEventListener('submit', (e) => e.preventDefault());
    await go(1);
  },

  async project() {
    const id = pathId();
    const project = await get(orgPath(`/projects/${id}`));
    $('h1').textContent = `Project ${project.name}`;
    document.title = `${project.name} · Proving console`;
    facts('project-facts', [
      ['Id', h('code', {}, project.id)],
      ['Created', `${fmtDate(project.created_at)} by ${project.created_by}`],
      ['Programs', fmtNum(project.program_count)],
      ['Proofs run', fmtNum(project.total_proofs_run)],
    ]);
    const go = pager('programs-pager', async (p) => {
      const result = await get(orgPath(`/programs?project_id=${id}&page=${p}`));
      fillTable(
        'programs',
        result.items.map((pg) =>
          h('tr', {}, cell(h('a', { href: `/console/programs/${pg.id}` }, pg.name)), cell(stateBadge(pg.status)), cell(fmtNum(pg.proofs_run), 'num'), cell(fmtDate(pg.created_at)), cell(pg.created_by)),
        ),
      );
      return result;
    });
    await go(1);
  },

  async program() {
    const id = pathId();
    const pg = await get(orgPath(`/programs/${id}`));
    $('h1').textContent = `Program ${pg.name}`;
    document.title = `${pg.name} · Proving console`;
    facts('program-facts', [
      ['Status', stateBadge(pg.status)],
      ['Project', h('a', { href: `/console/projects/${pg.project_id}` }, pg.project_name)],
      ['Id', h('code', {}, pg.id)],
      ['Program hash (ELF SHA-256)', h('code', {}, pg.program_hash)],
      ['App exe commit', h('code', {}, pg.artifacts.app_exe_commit || '—')],
      ['App VM commit', h('code', {}, pg.artifacts.app_vm_commit)],
      ['Config', `${pg.config_uuid} (engine ${pg.artifacts.engine}, openvm ${pg.openvm_config})`],
      ['Artifacts', `ELF ${fmtNum(pg.artifacts.elf_size)} bytes, VMEXE ${fmtNum(pg.artifacts.vmexe_size)} bytes`],
      ['Proofs', Object.entries(pg.proof_states).map(([s, n]) => `${s}: ${n}`).join(', ') || 'none yet'],
      ['Created', `${fmtDate(pg.created_at)} by ${pg.created_by}`],
      ['Error', pg.error_message || '—'],
    ]);
    const go = pager('proofs-pager', async (p) => {
      const result = await get(orgPath(`/proofs?program_id=${id}&page=${p}`));
      fillTable(
        'proofs',
        result.items.map((pr) =>
          h('tr', {}, cell(h('a', { href: `/console/proofs/${pr.id}` }, h('code', {}, short(pr.id)))), cell(stateBadge(pr.state)), cell(pr.proof_type), cell(fmtDate(pr.created_at)), cell(fmtUsd(pr.cost), 'num')),
        ),
      );
      return result;
    });
    await go(1);
    const runs = await get(orgPath(`/executions?program_id=${id}`));
    fillTable(
      'executions',
      runs.items.map((e) => h('tr', {}, cell(h('code', {}, short(e.id))), cell(stateBadge(e.status)), cell(e.mode), cell(fmtDate(e.created_at)), cell(fmtNum(e.num_instructions), 'num'))),
    );
  },

  async proofs() {
    const form = $('#filters');
    const go = pager('proofs-pager', async (p) => {
      const q = formQuery(form);
      q.set('page', p);
      const result = await get(orgPath(`/proofs?${q}`));
      fillTable(
        'proofs',
        result.items.map((pr) =>
          h(
            'tr',
            {},
            cell(h('a', { href: `/console/proofs/${pr.id}` }, h('code', {}, short(pr.id)))),
            cell(h('a', { href: `/console/programs/${pr.program_uuid}` }, pr.program_name)),
            cell(stateBadge(pr.state)),
            cell(fmtDate(pr.created_at)),
            cell(fmtUsd(pr.cost), 'num'),
          ),
        ),
        'No proofs match.',
      );
      return result;
    });
    form.addEventListener('input', debounce(() => go(1).catch(fail)));
    form.addEventListener('submit', (e) => e.preventDefault());
    await go(1);
  },

  async proof() {
    const id = pathId();
    const logs = $('#logs');
    const follow = $('#follow');
    const cancel = $('#cancel');
    let offset = 0;
    let shownState = null;

    const render = (pr) => {
      $('h1').textContent = `Proof ${short(pr.id)}`;
      const failed = ['Failed', 'Canceling', 'Canceled'].includes(pr.state);
      const at = PROOF_STEPS.indexOf(pr.state);
      const steps = failed ? [...PROOF_STEPS.slice(0, -1), pr.state] : PROOF_STEPS;
      $('#timeline').replaceChildren(
        ...steps.map((s, i) =>
          h(
            'li',
            {
              class: s === pr.state ? (failed ? 'bad' : pr.state === 'Succeeded' ? 'done' : 'current') : !failed && i < at ? 'done' : '',
              'aria-current': s === pr.state ? 'step' : undefined,
            },
            s,
          ),
        ),
      );
      facts('proof-facts', [
        ['State', h('span', { id: 'proof-state', class: `state ${pr.state}` }, pr.state)],
        ['Program', h('a', { href: `/console/programs/${pr.program_uuid}` }, pr.program_name)],
        ['Project', h('a', { href: `/console/projects/${pr.project_id}` }, pr.project_name)],
        ['Id', h('code', {}, pr.id)],
        ['Type', pr.proof_type],
        ['Cost (USD)', fmtUsd(pr.cost)],
        ['GPUs', `${pr.num_gpus}${pr.machine_type ? ` on ${pr.machine_type}` : ''}`],
        ['Instructions', fmtNum(pr.num_instructions)],
        ['Cells used', fmtNum(pr.cells_used)],
        ['Created', `${fmtDate(pr.created_at)} by ${pr.created_by}`],
        ['Started', fmtDate(pr.launched_at)],
        ['Finished', fmtDate(pr.terminated_at)],
        ['Attempt', pr.job ? String(pr.job.attempt) : '—'],
        ['Waiting because', pr.job?.waiting_reason || '—'],
        ['Error', pr.error_message || '—'],
      ]);
      cancel.hidden = FINAL_STATES.includes(pr.state) || pr.state === 'Canceling';
      $('#downloads').replaceChildren(
        ...pr.files.map((kind) => h('button', { type: 'button', class: 'ghost', onclick: () => download(pr.id, kind).catch(fail) }, `Download ${kind} proof`)),
      );
      if (shownState !== pr.state && shownState !== null) status(`State: ${pr.state}`);
      shownState = pr.state;
    };

    const readLogs = async () => {
      const res = await call(orgPath(`/proofs/${id}/logs?offset=${offset}`));
      const text = await res.text();
      offset = Number(res.headers.get('x-log-next-offset') || offset);
      if (text) {
        const atBottom = logs.scrollTop + logs.clientHeight >= logs.scrollHeight - 8;
        logs.append(text);
        if (follow.checked && atBottom) logs.scrollTop = logs.scrollHeight;
      }
      return { more: text.length > 0, state: res.headers.get('x-proof-state') };
    };

    cancel.addEventListener('click', async () => {
      if (!confirm('Cancel this proof?')) return;
      try {
        const r = await send('POST', orgPath(`/proofs/${id}/cancel`));
        status(r.message);
        render(await get(orgPath(`/proofs/${id}`)));
      } catch (err) {
        fail(err);
      }
    });

    let pr = await get(orgPath(`/proofs/${id}`));
    render(pr);
    while ((await readLogs()).more);
    document.body.dataset.ready = 'true';
    // Live: poll the record and the log until the proof is final, then read the log's tail once more.
    while (!FINAL_STATES.includes(pr.state)) {
      await new Promise((r) => setTimeout(r, POLL_MS));
      if (document.hidden) continue;
      try {
        pr = await get(orgPath(`/proofs/${id}`));
        render(pr);
        if (follow.checked) while ((await readLogs()).more);
      } catch (err) {
        fail(err);
      }
    }
    while ((await readLogs()).more);
  },

  async keys() {
    const form = $('#key-form');
    const load = async () => {
      const { items } = await get(orgPath('/api-keys'));
      fillTable(
        'keys',
        items.map((k) =>
          h(
            'tr',
            {},
            cell(k.name),
            cell(h('code', {}, k.prefix ? `${k.prefix}…` : '—')),
            cell(fmtDate(k.created_at)),
            cell(fmtDate(k.last_used_at)),
            cell(
              h(
                'button',
                {
                  type: 'button',
                  class: 'danger',
                  'aria-label': `Revoke key ${k.prefix || k.id}`,
                  onclick: async () => {
                    if (!confirm(`Revoke ${k.name} (${k.prefix || k.id})? Calls with it fail at once.`)) return;
                    try {
                      await send('DELETE', orgPath(`/api-keys/${k.id}`));
                      status('Key revoked.');
                      await load();
                    } catch (err) {
                      fail(err);
                    }
                  },
                },
                'Revoke',
              ),
            ),
          ),
        ),
        'No active keys.',
      );
    };
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      try {
        const created = await send('POST', orgPath('/api-keys'), form.name.value ? { name: form.name.value } : {});
        $('#new-key-value').textContent = created.key;
        $('#new-key').hidden = false;
        form.reset();
        status('Key created.');
        await load();
      } catch (err) {
        fail(err);
      }
    });
    copyButton($('#copy-key'), () => $('#new-key-value').textContent);
    await load();
  },

  async webhooks() {
    const admin = ['owner', 'admin'].includes(org.role);
    const form = $('#webhook-form');
    form.hidden = !admin;
    if (!admin) status(`Only owners and admins add and change webhook endpoints; you are a ${org.role} of ${org.name}.`);
    const go = pager('webhooks-pager', async (p) => {
      const result = await get(orgPath(`/webhooks?page=${p}`));
      fillTable(
        'webhooks',
        result.items.map((w) =>
          h(
            'tr',
            {},
            cell(h('a', { href: `/console/webhooks/${w.id}` }, w.url)),
            cell(eventsText(w.events)),
            cell(endpointBadge(w)),
            cell(fmtDate(w.created_at)),
            cell(w.created_by),
          ),
        ),
        'No webhook endpoints yet.',
      );
      return result;
    });
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      try {
        const body = { url: form.url.value, ...(form.description.value ? { description: form.description.value } : {}), ...chosenEvents(form) };
        const created = await send('POST', orgPath('/webhooks'), body);
        $('#new-secret-value').textContent = created.secret;
        $('#new-secret').hidden = false;
        form.reset();
        status(`Endpoint added: ${created.url}.`);
        await go(1);
      } catch (err) {
        fail(err);
      }
    });
    copyButton($('#copy-secret'), () => $('#new-secret-value').textContent);
    await go(1);
  },

  async webhook() {
    const id = pathId();
    const admin = ['owner', 'admin'].includes(org.role);
    const path = orgPath(`/webhooks/${encodeURIComponent(id)}`);
    const edit = $('#webhook-edit');
    const toggle = $('#toggle-disabled');
    let endpoint;

    const render = (w) => {
      endpoint = w;
      $('h1').textContent = `Webhook ${w.url}`;
      facts('webhook-facts', [
        ['Status', endpointBadge(w)],
        ['Why disabled', w.disabled_reason || '—'],
        ['URL', h('code', {}, w.url)],
        ['Events', eventsText(w.events)],
        ['Description', w.description || '—'],
        ['Id', h('code', {}, w.id)],
        ['Created', `${fmtDate(w.created_at)} by ${w.created_by}`],
        ['Changed', fmtDate(w.updated_at)],
        ['Previous secret signs until', fmtDate(w.previous_secret_valid_until)],
      ]);
      toggle.textContent = w.disabled ? 'Enable' : 'Disable';
      edit.url.value = w.url;
      edit.description.value = w.description;
      setEvents(edit, w.events);
    };

    const attemptsList = (d) =>
      d.attempts.length
        ? h(
            'ol',
            { class: 'attempts' },
            ...d.attempts.map((a) =>
              h(
                'li',
                {},
                `#${a.attempt} ${fmtDate(a.attempted_at)} · `,
                h('span', { class: `state ${a.error ? 'failed' : 'delivered'}` }, a.status_code === null ? 'no answer' : `HTTP ${a.status_code}`),
                ` · ${a.latency_ms} ms`,
                a.error ? ` · ${a.error}` : '',
                a.response_excerpt ? h('div', { class: 'excerpt' }, a.response_excerpt) : '',
              ),
            ),
          )
        : d.error || (d.status === 'pending' ? `due ${fmtDate(d.next_attempt_at)}` : '—');

    const filters = $('#filters');
    let pending = false;
    const goDeliveries = pager('deliveries-pager', async (p) => {
      const q = formQuery(filters);
      q.set('page', p);
      const result = await get(`${path}/deliveries?${q}`);
      pending = result.items.some((d) => d.status === 'pending');
      fillTable(
        'deliveries',
        result.items.map((d) =>
          h(
            'tr',
            { 'data-delivery': d.id },
            cell([h('code', {}, d.type), h('div', { class: 'excerpt mono' }, d.id)]),
            cell(h('span', { class: `state ${d.status}` }, d.status)),
            cell(fmtDate(d.created_at)),
            cell(attemptsList(d)),
            cell(
              admin && d.status !== 'pending'
                ? h(
                    'button',
                    {
                      type: 'button',
                      class: 'ghost',
                      'aria-label': `Redeliver ${d.type} ${d.id}`,
                      onclick: async () => {
                        try {
                          await send('POST', `${path}/deliveries/${d.id}/redeliver`);
                          status(`Redelivering ${d.id}.`);
                          await goDeliveries(1);
                        } catch (err) {
                          fail(err);
                        }
                      },
                    },
                    'Redeliver',
                  )
                : '',
            ),
          ),
        ),
        'No deliveries yet.',
      );
      return result;
    });

    const act = async (fn, done) => {
      try {
        await fn();
        if (done) status(done);
      } catch (err) {
        fail(err);
      }
    };
    $('#send-test').addEventListener('click', () =>
      act(async () => {
        await send('POST', `${path}/test`);
        await goDeliveries(1);
      }, 'Test event queued.'),
    );
    toggle.addEventListener('click', () =>
      act(async () => render(await send('PATCH', path, { disabled: !endpoint.disabled })), endpoint?.disabled ? 'Endpoint enabled.' : 'Endpoint disabled.'),
    );
    $('#rotate-secret').addEventListener('click', () =>
      act(async () => {
        if (!confirm('Rotate the signing secret? The previous one keeps signing for 24 hours.')) return;
        const rotated = await send('POST', `${path}/rotate-secret`);
        $('#new-secret-value').textContent = rotated.secret;
        $('#new-secret').hidden = false;
        const { secret: _secret, ...record } = rotated;
        render(record);
      }),
    );
    $('#delete-webhook').addEventListener('click', () =>
      act(async () => {
        if (!confirm(`Delete the endpoint ${endpoint.url}? Its pending deliveries are not sent.`)) return;
        await send('DELETE', path);
        location.assign('/console/webhooks');
      }),
    );
    edit.addEventListener('submit', (e) => {
      e.preventDefault();
      act(async () => render(await send('PATCH', path, { url: edit.url.value, description: edit.description.value, ...chosenEvents(edit, true) })), 'Endpoint saved.');
    });
    filters.addEventListener('change', () => goDeliveries(1).catch(fail));
    filters.addEventListener('submit', (e) => e.preventDefault());
    $('#refresh').addEventListener('click', () => goDeliveries(1).catch(fail));
    copyButton($('#copy-secret'), () => $('#new-secret-value').textContent);

    render(await get(path));
    $('#webhook-actions').hidden = !admin;
    $('#webhook-edit-box').hidden = !admin;
    await goDeliveries(1);
    document.body.dataset.ready = 'true';
    // While something is on its way, follow it.
    setInterval(() => pending && !document.hidden && goDeliveries(1).catch(fail), 2000);
  },

  async members() {
    if (!['owner', 'admin'].includes(org.role)) {
      $('#members-section').hidden = true;
      return status(`Only owners and admins manage members; you are a ${org.role} of ${org.name}.`, true);
    }
    const roles = org.role === 'owner' ? ['owner', 'admin', 'member'] : ['admin', 'member'];
    const loadMembers = async () => {
      const { items } = await get(orgPath('/members'));
      fillTable(
        'members',
        items.map((m) => {
          const editable = org.role === 'owner' || m.role !== 'owner';
          const select = h(
            'select',
            {
              'aria-label': `Role of ${m.email}`,
              disabled: !editable,
              onchange: async (e) => {
                try {
                  status((await send('PATCH', orgPath(`/members/${m.user_id}`), { role: e.target.value })).message);
                } catch (err) {
                  fail(err);
                }
                await loadMembers();
              },
            },
            ...(editable ? roles : ['owner']).map((r) => h('option', { value: r, selected: r === m.role }, r)),
          );
          const remove = h(
            'button',
            {
              type: 'button',
              class: 'danger',
              disabled: !editable,
              'aria-label': `Remove ${m.email}`,
              onclick: async () => {
                if (!confirm(`Remove ${m.email}? Their sessions end and their keys are revoked.`)) return;
                try {
                  status((await send('DELETE', orgPath(`/members/${m.user_id}`))).message);
                  await Promise.all([loadMembers(), goAudit(1)]);
                } catch (err) {
                  fail(err);
                }
              },
            },
            'Remove',
          );
          return h('tr', {}, cell(m.email), cell(m.name || '—'), cell(select), cell(fmtDate(m.joined_at)), cell(remove));
        }),
      );
    };
    const loadInvites = async () => {
      const { items } = await get(orgPath('/invites'));
      fillTable(
        'invites',
        items.map((i) =>
          h(
            'tr',
            {},
            cell(i.email),
            cell(i.role),
            cell(i.created_by),
            cell(fmtDate(i.expires_at)),
            cell(
              h(
                'button',
                {
                  type: 'button',
                  class: 'danger',
                  'aria-label': `Revoke the invitation of ${i.email}`,
                  onclick: async () => {
                    try {
                      status((await send('DELETE', orgPath(`/invites/${i.id}`))).message);
                      await loadInvites();
                    } catch (err) {
                      fail(err);
                    }
                  },
                },
                'Revoke',
              ),
            ),
          ),
        ),
        'No pending invitations.',
      );
    };
    const goAudit = pager('audit-pager', async (p) => {
      const result = await get(orgPath(`/audit?page=${p}`));
      fillTable(
        'audit',
        result.items.map((a) => h('tr', {}, cell(fmtDate(a.created_at)), cell(a.actor), cell(a.action), cell(h('code', {}, a.target)))),
        'No changes yet.',
      );
      return result;
    });
    const form = $('#invite-create');
    if (org.role !== 'owner') form.role.querySelector('option[value="owner"]').remove();
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      try {
        const invite = await send('POST', orgPath('/invites'), { email: form.email.value, role: form.role.value });
        $('#invite-link-value').textContent = invite.link;
        $('#invite-link').hidden = false;
        status(`Invitation created for ${invite.email}.`);
        form.reset();
        await Promise.all([loadInvites(), goAudit(1)]);
      } catch (err) {
        fail(err);
      }
    });
    copyButton($('#copy-invite'), () => $('#invite-link-value').textContent);
    await Promise.all([loadMembers(), loadInvites(), goAudit(1)]);
  },

  async usage() {
    const form = $('#filters');
    const today = new Date().toISOString().slice(0, 10);
    form.to.value = today;
    form.from.value = new Date(Date.now() - 29 * 86400000).toISOString().slice(0, 10);
    let chart = null;
    const load = async () => {
      const u = await get(orgPath(`/usage?${formQuery(form)}`));
      facts('usage-totals', [
        ['Proofs', fmtNum(u.totals.proofs)],
        ['Instructions', fmtNum(u.totals.instructions)],
        ['GPU-hours', String(u.totals.gpu_hours)],
        ['Cost (USD)', fmtUsd(u.totals.cost)],
      ]);
      const row = (label, t) => h('tr', {}, cell(label), cell(fmtNum(t.proofs), 'num'), cell(fmtNum(t.instructions), 'num'), cell(String(t.gpu_hours), 'num'), cell(fmtUsd(t.cost), 'num'));
      fillTable('usage-days', u.days.filter((d) => d.proofs > 0).map((d) => row(d.date, d)), 'No proofs in this range.');
      fillTable('usage-projects', u.projects.map((p) => row(p.project_name, p)), 'No proofs in this range.');
      const box = $('#usage-chart');
      const data = [u.days.map((d) => Date.parse(d.date) / 1000), u.days.map((d) => d.proofs), u.days.map((d) => d.cost / 1e6)];
      const fg = getComputedStyle(document.body).color;
      const opts = {
        width: Math.max(300, box.clientWidth || 600),
        height: 260,
        series: [
          {},
          { label: 'Proofs', stroke: '#3b82f6', fill: 'rgba(59,130,246,0.35)', paths: window.uPlot?.paths?.bars?.({ size: [0.6, 40] }), scale: 'n' },
          { label: 'Cost (USD)', stroke: '#f59e0b', width: 2, scale: 'usd' },
        ],
        axes: [
          { stroke: fg },
          { scale: 'n', stroke: fg, label: 'Proofs' },
          // Costs of dev and small proofs are fractions of a cent: enough digits to tell ticks apart.
          { scale: 'usd', side: 1, stroke: fg, label: 'USD', grid: { show: false }, size: 70, values: (_u, ticks) => ticks.map((v) => (v < 0.01 ? v.toFixed(6) : v.toFixed(2))) },
        ],
        scales: { x: { time: true }, n: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      };
      if (!window.uPlot) return status('The chart library did not load.', true);
      chart?.destroy();
      chart = new window.uPlot(opts, data, box);
    };
    form.addEventListener('change', () => load().catch(fail));
    await load();
  },

  async fleet() {
    if (!session.user.is_operator) return status('The fleet page is for service operators.', true);
    const load = async () => {
      const f = await get('/fleet');
      facts('fleet-facts', [
        ['Agents (not stale)', String(f.agents.filter((a) => !a.stale).length)],
        ['GPUs (not stale)', String(f.agents.filter((a) => !a.stale).reduce((n, a) => n + a.gpus, 0))],
        ['Jobs running', String(f.running)],
        ['Jobs queued', String(f.queued.reduce((n, q) => n + q.jobs, 0))],
      ]);
      fillTable(
        'agents',
        f.agents.map((a) => h('tr', {}, cell(a.name + (a.stale ? ' (stale)' : '')), cell(a.machine_type), cell(String(a.gpus), 'num'), cell(a.engines.join(', ')), cell(a.configs.join(', ') || 'any'), cell(fmtDate(a.last_seen_at)))),
        'No agent has asked for work in the last day.',
      );
      fillTable(
        'queue',
        f.queued.map((q) => h('tr', {}, cell(q.engine), cell(h('code', {}, q.config_id)), cell(String(q.jobs), 'num'), cell(fmtDate(q.oldest_queued_at)), cell(`${q.oldest_age_seconds} s`, 'num'))),
        'Nothing queued.',
      );
    };
    await load();
    setInterval(() => !document.hidden && load().catch(fail), 5000);
  },
};

// ---------------------------------------------------------------------------
// Boot

function markNav() {
  for (const a of document.querySelectorAll('.top nav a')) if (location.pathname.startsWith(a.getAttribute('href'))) a.setAttribute('aria-current', 'page');
}

function themeToggle() {
  $('#theme-toggle')?.addEventListener('click', () => {
    const dark = document.documentElement.dataset.theme ? document.documentElement.dataset.theme === 'dark' : matchMedia('(prefers-color-scheme: dark)').matches;
    const next = dark ? 'light' : 'dark';
    document.documentElement.dataset.theme = next;
    localStorage.setItem('console-theme', next);
  });
}

async function boot() {
  themeToggle();
  markNav();
  if (document.body.dataset.open) return openPages[page]?.();
  if (!(await refresh())) return toSignIn();
  $('#signout')?.addEventListener('click', async () => {
    await fetch(`${API}/auth/signout`, { method: 'POST', headers: CSRF });
    session.token = null;
    location.assign('/console/signin');
  });
  if (!(await loadOrgs())) return;
  document.body.dataset.org = org.id;
  await pages[page]?.();
  document.body.dataset.ready = 'true';
}

boot().catch(fail);
