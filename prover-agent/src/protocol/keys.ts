// The key files an operator publishes for a config (the upload protocol: ../protocol.ts,
// "Key files an operator publishes"), and what the service records of each published version.

export const PUBLISHED_KEY_NAMES = ['app_pk', 'app_vk', 'agg_pk', 'agg_vk', 'halo2_pk', 'evm_verifier'] as const;
export type PublishedKeyName = (typeof PUBLISHED_KEY_NAMES)[number];

/** One published version of a key file: what the service serves, and what agents check their own copy against. */
export interface PublishedKey {
  version: number;
  /** Lowercase hex SHA-256 of the file. */
  sha256: string;
  size: number;
}

/** The current published version of each of a config's keys (absent: not published). */
export type PublishedKeys = Partial<Record<PublishedKeyName, PublishedKey>>;
