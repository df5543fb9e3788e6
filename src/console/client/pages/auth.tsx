// Sign in, set a password from a one-time link, join from an invitation.
import { useState } from 'hono/jsx/dom';
import { links } from '../../ui/site.ts';
import { InviteView, SetPasswordView, SigninView } from '../../ui/views/auth.tsx';
import { attempt, fail } from '../chrome.ts';
import { field, formOf, hashParam } from '../dom.ts';
import { authApi } from '../endpoints.ts';
import type { OpenPage } from '../signed-in.ts';

/** Where to go after signing in: only a path of this console, never an absolute URL from the query string. */
function afterSignIn(next: string | null): string {
  return next && next.startsWith('/console/') && !next.startsWith('//') ? next : links.home;
}

/** Sign-in, where a one-time link was just used, starts with its email. */
const toSignIn = (email: string) => location.assign(`${links.signin}?email=${encodeURIComponent(email)}`);

/** A one-time link's token, taken out of the address bar (and the history) at once. */
function takeToken(): string | null {
  const token = hashParam('token');
  history.replaceState(null, '', location.pathname);
  return token;
}

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
  return <SigninView email={email} busy={busy} onSubmit={submit} />;
}

export const signin: OpenPage = async () => <SigninPage email={new URLSearchParams(location.search).get('email') ?? undefined} />;

export const setPassword: OpenPage = async () => {
  const token = takeToken();
  if (!token) {
    fail('This link has no token: ask your operator for a new one.');
    return <SetPasswordView hidden />;
  }
  const submit = (event: Event) => {
    event.preventDefault();
    const form = formOf(event);
    void attempt(async () => toSignIn((await authApi.setPassword(token, field(form, 'password'))).email));
  };
  return <SetPasswordView onSubmit={submit} />;
};

export const invite: OpenPage = async () => {
  const token = takeToken();
  if (!token) {
    fail('This link has no token: ask for a new invitation.');
    return <InviteView />;
  }
  const summary = await authApi.readInvite(token);
  const submit = (event: Event) => {
    event.preventDefault();
    const form = formOf(event);
    void attempt(async () => toSignIn((await authApi.acceptInvite(token, field(form, 'password'), field(form, 'name') || undefined)).email));
  };
  return <InviteView invite={summary} onSubmit={submit} />;
};
