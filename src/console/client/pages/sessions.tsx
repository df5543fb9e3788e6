// Your sessions: end one, or all (this one included: then to the sign-in page).
import { useState } from 'hono/jsx/dom';
import type { ConsoleSession } from '../../ui/api-types.ts';
import { formatDate } from '../../ui/format.ts';
import { links } from '../../ui/site.ts';
import { SessionsView } from '../../ui/views/sessions.tsx';
import { attempt, say } from '../chrome.ts';
import { accountApi } from '../endpoints.ts';
import { signOut } from '../http.ts';
import type { SignedInPage } from '../signed-in.ts';

const leave = async () => {
  await signOut();
  location.assign(links.signin);
};

function SessionsPage({ initial }: { initial: ConsoleSession[] }) {
  const [sessions, setSessions] = useState(initial);
  const end = (s: ConsoleSession) => {
    if (!s.current && !confirm(`End the session signed in ${formatDate(s.created_at)}? That browser is signed out at once.`)) return;
    void attempt(async () => {
      await accountApi.endSession(s.id);
      if (s.current) return leave();
      say('Session ended.');
      setSessions((await accountApi.sessions()).items);
    });
  };
  const endAll = () => {
    if (!confirm('Sign out everywhere, this browser included?')) return;
    void attempt(async () => {
      await accountApi.endAllSessions();
      await leave();
    });
  };
  return <SessionsView sessions={sessions} onEnd={end} onEndAll={endAll} />;
}

export const sessions: SignedInPage = async () => <SessionsPage initial={(await accountApi.sessions()).items} />;
