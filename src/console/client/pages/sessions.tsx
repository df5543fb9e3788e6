// Your sessions: end one, or all (this one included: then to the sign-in page).
import { useState } from 'hono/jsx/dom';
import type { ConsoleSession } from '../../ui/api-types.ts';
import { formatDate } from '../../ui/format.ts';
import { links } from '../../ui/site.ts';
import { SessionsView } from '../../ui/views/sessions.tsx';
import { attempt, say } from '../chrome.ts';
import { ask } from '../confirm.tsx';
import { accountApi } from '../endpoints.ts';
import { signOut } from '../http.ts';
import type { SignedInPage } from '../signed-in.ts';

const leave = async () => {
  await signOut();
  location.assign(links.signin);
};

function SessionsPage({ initial }: { initial: ConsoleSession[] }) {
  const [sessions, setSessions] = useState(initial);
  const end = async (s: ConsoleSession) => {
    const yes =
      s.current ||
      (await ask({
        title: `End the session signed in ${formatDate(s.created_at)}?`,
        body: <p>That browser is signed out at once; signing in again makes a new session.</p>,
        action: 'End session',
      }));
    if (!yes) return;
    await attempt(async () => {
      await accountApi.endSession(s.id);
      if (s.current) return leave();
      say('Session ended.');
      setSessions((await accountApi.sessions()).items);
    });
  };
  const endAll = async () => {
    const yes = await ask({
      title: 'Sign out everywhere?',
      body: <p>Every browser signed in as you is signed out at once, this one included.</p>,
      action: 'Sign out everywhere',
    });
    if (yes)
      await attempt(async () => {
        await accountApi.endAllSessions();
        await leave();
      });
  };
  return <SessionsView sessions={sessions} onEnd={(s) => void end(s)} onEndAll={() => void endAll()} />;
}

export const sessions: SignedInPage = async () => <SessionsPage initial={(await accountApi.sessions()).items} />;
