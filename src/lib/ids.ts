// Ids of the service's own records: a prefix naming what the record is, then a ULID
// (unique, and sorting by creation time). Records callers create through the API
// (programs, projects, proofs, ...) have UUIDs instead, as the reference service's do.
import { ulid } from 'ulid';

const prefixed = (prefix: string) => () => `${prefix}_${ulid().toLowerCase()}`;

export const newOrganizationId = prefixed('org');
export const newUserId = prefixed('usr');
export const newApiKeyId = prefixed('key');
export const newAgentTokenId = prefixed('agt');
/** A publisher token (src/features/configs/publisher-auth.ts). */
export const newPublisherTokenId = prefixed('pub');
/** A one-time console link: an invitation, a set-password or a password-reset link. */
export const newLinkId = prefixed('lnk');
export const newSessionId = prefixed('ses');
/** A message of the local mail outbox (src/features/accounts/mail.ts). */
export const newMailId = prefixed('mail');
/** Configs keep the ULID's upper case: `cfg_{ULID}`, as the reference service spells them. */
export const newConfigId = () => `cfg_${ulid()}`;
/** An object an attempt wrote for its job's results (src/jobs/results.ts). */
export const newUploadId = prefixed('upl');
