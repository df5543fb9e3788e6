// Shallow checks of the zkVM's proof JSON formats (client-conventions.md "Proof file
// formats"). Shallow on purpose: the cryptographic check is the prover's job.

const HEX = /^(0x)?([0-9a-fA-F]{2})*$/;

/**
 * Why `text` is not a STARK proof file (VersionedVmStarkProof), or null when it has
 * the shape: {"version": "v<major>.<minor>…", "proof": hex, "user_pvs_proof": hex,
 * "deferral_merkle_proofs": hex | null}. Hex with or without `0x`: the published
 * client strips every `0x` before uploading.
 */
export function starkProofShapeError(text: string): string | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return `not valid JSON (${(e as Error).message})`;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'a STARK proof must be a JSON object';
  const p = value as Record<string, unknown>;
  if (typeof p.version !== 'string' || !/^v?\d+\.\d+/.test(p.version)) return 'field "version" must be a string like "v1.0"';
  for (const field of ['proof', 'user_pvs_proof'] as const) {
    if (typeof p[field] !== 'string') return `field "${field}" must be a hex string`;
    if (!HEX.test(p[field] as string)) return `field "${field}" is not hex (an even number of hex digits, 0x optional)`;
  }
  const d = p.deferral_merkle_proofs;
  if (d !== undefined && d !== null && (typeof d !== 'string' || !HEX.test(d)))
    return 'field "deferral_merkle_proofs" must be hex or null';
  return null;
}
