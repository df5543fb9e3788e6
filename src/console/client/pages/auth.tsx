// Sign in, set a password from a one-time link, ask for and use a password reset, join
// from an invitation (landing on the organization's page), read the local outbox; the
// page for a console URL that is none.
import { useState } from 'hono/jsx/dom';
import type { InviteSummary } from '../../ui/api-types.ts';
import { links } from '../../ui/site.ts';
import { ForgotPasswordView, InviteView, OutboxView, SetPasswordView, SigninView, type InviteMode } from '../../ui/views/auth.tsx';
import { NotFoundView } from '../../ui/views/not-found.tsx';
import { attempt, fail, say } from '../chrome.ts';
import { field, formOf, hashParam } from '../dom.ts';
import { authApi, outboxApi } from '../endpoints.ts';
import { refresh, session } from '../http.ts';
import type { OpenPage } from '../signed-in.ts';

/** Where to go after signing in: only a path of this console, never an absolute URL from the query string. */
function afterSignIn(next: string | null): string {
  return next && next.startsWith('/console/') && !next.startsWith('//') ? next : links.home;
}

/** Sign-in, where a one-time link was just used, starts with its email. */
const toSignIn = (email: string, next?: string) =>
  location.assign(`${links.signin}?email=${encodeURIComponent(email)}${next ? `&next=${encodeURIComponent(next)}` : ''}`);

/** A one-time link's token, taken out of the address bar (and the history) at once. */
function takeToken(): string | null {
  const token = hashParam('token');
  history.replaceState(null, '', location.pathname);
  return token;
}

/**
 * An invitation's token kept in this tab while its invitee signs in (sessionStorage:
 * this tab only, never sent to a server, gone when the tab closes).
 */
const PENDING_INVITE = 'console-pending-invite';

function SigninPage({ email }: { email?: string }) {
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = formOf(event);
    setBusy(true);
    try {
      await authApi.signIn(field(form, 'email'), field(form, 'password'));
      location.assign(afterSignIn(new URLSearchParams(location.search).get('next')));
    } catch (err) {
      fail(err);
      setBusy(false);
    }
  };
  return <SigninView email={email} busy={busy} onSubmit={(e) => void submit(e)} />;
}

export const signin: OpenPage = async () => <SigninPage email={new URLSearchParams(location.search).get('email') ?? undefined} />;

/** A page that sets a password with its link's token (a reset: and says whether to revoke the person's API keys). */
const passwordPage =
  (use: (token: string, form: HTMLFormElement) => Promise<{ email: string }>, reset = false): OpenPage =>
  async () => {
    const token = takeToken();
    if (!token) {
      fail('This link has no token: ask for a new one.');
      return <SetPasswordView hidden reset={reset} />;
    }
    const submit = (event: Event) => {
      event.preventDefault();
      const form = formOf(event);
      void attempt(async () => toSignIn((await use(token, form)).email));
    };
    return <SetPasswordView reset={reset} onSubmit={submit} />;
  };

export const setPassword: OpenPage = passwordPage((token, form) => authApi.setPassword(token, field(form, 'password')));
export const resetPassword: OpenPage = passwordPage(
  (token, form) => authApi.resetPassword(token, field(form, 'password'), new FormData(form).has('revoke_api_keys')),
  true,
);

function ForgotPasswordPage({ email }: { email?: string }) {
  const [sent, setSent] = useState(false);
  const submit = (event: Event) => {
    event.preventDefault();
    const form = formOf(event);
    void attempt(async () => {
      say((await authApi.askPasswordReset(field(form, 'email'))).message);
      setSent(true);
    });
  };
  return <ForgotPasswordView email={email} sent={sent} onSubmit={submit} />;
}

export const forgotPassword: OpenPage = async () => (
  <ForgotPasswordPage email={new URLSearchParams(location.search).get('email') ?? undefined} />
);

/** How this browser can accept: it tries the refresh cookie to learn who is signed in. */
async function inviteMode(invite: InviteSummary): Promise<{ mode: InviteMode; signedInAs?: string }> {
  if (!invite.has_account) return { mode: 'new' };
  if (!(await refresh())) return { mode: 'sign-in' };
  const signedInAs = session.user?.email;
  return { mode: signedInAs === invite.email ? 'join' : 'other-user', signedInAs };
}

export const invite: OpenPage = async () => {
  const token = takeToken() ?? sessionStorage.getItem(PENDING_INVITE);
  sessionStorage.removeItem(PENDING_INVITE);
  if (!token) {
    fail('This link has no token: ask for a new invitation.');
    return <InviteView />;
  }
  const summary = await authApi.readInvite(token);
  const { mode, signedInAs } = await inviteMode(summary);
  // Joined: to the organization's page, with a welcome and the first steps. A new account
  // signs in with the password it just chose (sent once more, to the same sign-in as any);
  // should that fail (throttled), it signs in on the sign-in page and lands there after.
  const submit = (event: Event) => {
    event.preventDefault();
    const form = formOf(event);
    void attempt(async () => {
      if (mode === 'join') {
        const joined = await authApi.acceptSignedIn(token, session.token!);
        location.assign(links.welcome(joined.org_id));
      } else {
        const password = field(form, 'password');
        const joined = await authApi.acceptAsNew(token, password, field(form, 'name') || undefined);
        try {
          await authApi.signIn(joined.email, password);
        } catch {
          return toSignIn(joined.email, links.welcome(joined.org_id));
        }
        location.assign(links.welcome(joined.org_id));
      }
    });
  };
  const signIn = () => {
    sessionStorage.setItem(PENDING_INVITE, token);
    toSignIn(summary.email, links.invite);
  };
  return <InviteView invite={summary} mode={mode} signedInAs={signedInAs} onSubmit={submit} onSignIn={signIn} />;
};

export const outbox: OpenPage = async () => <OutboxView messages={(await outboxApi.messages()).items} />;

export const notFound: OpenPage = async () => <NotFoundView path={location.pathname} />;
