// The pages anyone may open: sign in, set a password from a one-time link, join an
// organization from an invitation.
import { MIN_PASSWORD_LENGTH } from '../../../lib/limits.ts';
import type { InviteSummary } from '../api-types.ts';

type Submit = (event: Event) => void;

export const SigninView = ({ email, busy, onSubmit }: { email?: string; busy?: boolean; onSubmit?: Submit }) => (
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
);

export const SetPasswordView = ({ hidden, onSubmit }: { hidden?: boolean; onSubmit?: Submit }) => (
  <form id="password-form" class="card narrow" hidden={hidden} onSubmit={onSubmit}>
    <label>
      {`New password (at least ${MIN_PASSWORD_LENGTH} characters)`}
      <input type="password" name="password" autocomplete="new-password" minlength={MIN_PASSWORD_LENGTH} required />
    </label>
    <button type="submit">Set password</button>
  </form>
);

/** Until the invitation is read, only its (empty) summary shows. */
export const InviteView = ({ invite, onSubmit }: { invite?: InviteSummary; onSubmit?: Submit }) => (
  <>
    <p id="invite-summary">{invite && `${invite.email} is invited to ${invite.org_name} as ${invite.role}.`}</p>
    <form id="invite-form" class="card narrow" hidden={!invite} onSubmit={onSubmit}>
      <label id="invite-name" hidden={invite?.has_account}>
        Your name
        <input type="text" name="name" autocomplete="name" />
      </label>
      <label>
        <span id="invite-password-label">
          {!invite ? 'Password' : invite.has_account ? 'Your current password' : `Choose a password (at least ${MIN_PASSWORD_LENGTH} characters)`}
        </span>
        <input type="password" name="password" autocomplete="new-password" required />
      </label>
      <button type="submit">Join</button>
    </form>
  </>
);
