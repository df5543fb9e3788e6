// The pages anyone may open: sign in, set a password from a one-time link, ask for a
// password reset and use its link, join an organization from an invitation, and (local
// development only) read the mail outbox.
import { MIN_PASSWORD_LENGTH } from '../../../lib/limits.ts';
import type { InviteSummary, OutboxMessage } from '../api-types.ts';
import { formatDate } from '../format.ts';
import { links } from '../site.ts';
import { type Column, DataTable } from '../table.tsx';

type Submit = (event: Event) => void;

export const SigninView = ({ email, busy, onSubmit }: { email?: string; busy?: boolean; onSubmit?: Submit }) => (
  <>
    <form id="signin-form" class="card narrow" onSubmit={onSubmit}>
      <label>
        Email
        <input type="email" name="email" autocomplete="username" required value={email} />
      </label>
      <label>
        Password
        <input type="password" name="password" autocomplete="current-password" required />
      </label>
      <button type="submit" disabled={busy}>
        Sign in
      </button>
    </form>
    <p>
      <a href={links.forgotPassword}>Forgot your password?</a>
    </p>
  </>
);

/** A new password, from a set-password or a password-reset link; a reset offers to revoke the person's API keys too. */
export const SetPasswordView = ({ hidden, reset, onSubmit }: { hidden?: boolean; reset?: boolean; onSubmit?: Submit }) => (
  <form id="password-form" class="card narrow" hidden={hidden} onSubmit={onSubmit}>
    <label>
      {`New password (at least ${MIN_PASSWORD_LENGTH} characters)`}
      <input type="password" name="password" autocomplete="new-password" minlength={MIN_PASSWORD_LENGTH} required />
    </label>
    {reset && (
      <label>
        <input type="checkbox" name="revoke_api_keys" checked />
        Also revoke every API key I made (if someone else may have used my account, keys they made look like mine)
      </label>
    )}
    <button type="submit">Set password</button>
  </form>
);

export const ResetPasswordView = (props: { hidden?: boolean; onSubmit?: Submit }) => <SetPasswordView reset {...props} />;

export const ForgotPasswordView = ({ email, sent, onSubmit }: { email?: string; sent?: boolean; onSubmit?: Submit }) => (
  <form id="forgot-form" class="card narrow" hidden={sent} onSubmit={onSubmit}>
    <p>We email a link to choose a new password to the account's address.</p>
    <label>
      Email
      <input type="email" name="email" autocomplete="username" required value={email} />
    </label>
    <button type="submit">Email me a link</button>
  </form>
);

/**
 * How an invitation can be accepted from this browser: a new account chooses its
 * password; an existing account accepts while signed in as itself (never with a
 * password here); signed in as someone else, or not at all, it signs in first.
 */
export type InviteMode = 'new' | 'join' | 'sign-in' | 'other-user';

export interface InviteViewProps {
  invite?: InviteSummary;
  mode?: InviteMode;
  /** The account this browser is signed in as, if any. */
  signedInAs?: string;
  onSubmit?: Submit;
  onSignIn?: () => void;
}

/** Until the invitation is read, only its (empty) summary shows. */
export const InviteView = ({ invite, mode, signedInAs, onSubmit, onSignIn }: InviteViewProps) => (
  <>
    <p id="invite-summary">{invite && `${invite.email} is invited to ${invite.org_name} as ${invite.role}.`}</p>
    <form id="invite-form" class="card narrow" hidden={!invite || (mode !== 'new' && mode !== 'join')} onSubmit={onSubmit}>
      {mode === 'join' ? (
        <p id="invite-join">{`You are signed in as ${signedInAs}.`}</p>
      ) : (
        <>
          <label id="invite-name">
            Your name
            <input type="text" name="name" autocomplete="name" />
          </label>
          <label>
            {`Choose a password (at least ${MIN_PASSWORD_LENGTH} characters)`}
            <input type="password" name="password" autocomplete="new-password" minlength={MIN_PASSWORD_LENGTH} required={mode === 'new'} />
          </label>
        </>
      )}
      <button type="submit">Join</button>
    </form>
    <div id="invite-sign-in" class="card narrow" hidden={!invite || (mode !== 'sign-in' && mode !== 'other-user')}>
      <p>
        {mode === 'other-user'
          ? `You are signed in as ${signedInAs}; this invitation is for ${invite?.email}. Sign in as ${invite?.email} to accept it.`
          : `${invite?.email} has an account: sign in as it to accept the invitation.`}
      </p>
      <button type="button" onClick={onSignIn}>{`Sign in as ${invite?.email ?? ''}`}</button>
    </div>
  </>
);

const outboxColumns: Column<OutboxMessage>[] = [
  { header: 'Sent', cell: (m) => formatDate(m.created_at) },
  { header: 'To', cell: (m) => m.to },
  { header: 'Subject', cell: (m) => m.subject },
  { header: 'Link', cell: (m) => (m.link ? <a href={m.link}>{m.link.replace(/#.*$/, '#…')}</a> : '') },
];

/** The local outbox: mail `npm start` did not send, newest first. */
export const OutboxView = ({ messages }: { messages?: OutboxMessage[] }) => (
  <>
    <p>Local development: mail is stored here instead of being sent (MAIL_SENDER = "outbox"). Anyone who can reach this server reads it.</p>
    <DataTable id="outbox" caption="Outbox" columns={outboxColumns} rows={messages} empty="No mail yet." />
  </>
);
