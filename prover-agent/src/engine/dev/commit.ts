// The dev engine's program commit and verification baseline. The zkVM commits to its
// transpiled program with a Merkle root of Poseidon2 hashes; the dev engine instead
// hashes the loaded image with SHA-256, which gives the same property that matters
// here: it changes whenever the program's loaded code or data changes, and not
// when only unloaded parts (symbols, section metadata) do.
import { createHash } from 'node:crypto';
import type { EngineConfig } from '../../protocol.ts';
import type { ProgramImage } from './elf.ts';

const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
};

export function toHex(bytes: Uint8Array, prefix = '0x'): string {
  return prefix + Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

/**
 * SHA-256 over a canonical form of the loaded image: a domain tag, the entry point, and
 * per PT_LOAD segment (by address) its address, size in memory, whether it is code, and
 * its bytes without trailing zeros (which the segment's zero fill supplies anyway).
 */
export function exeCommit(image: ProgramImage): Uint8Array {
  const h = createHash('sha256');
  h.update('zkvm-dev/exe-commit/v1');
  h.update(u32(image.entry));
  h.update(u32(image.segments.length));
  for (const s of image.segments) {
    let end = s.data.length;
    while (end > 0 && s.data[end - 1] === 0) end--;
    h.update(u32(s.vaddr));
    h.update(u32(s.memsz));
    h.update(Uint8Array.of(s.executable ? 1 : 0));
    h.update(u32(end));
    h.update(s.data.subarray(0, end));
  }
  return new Uint8Array(h.digest());
}

/** A labelled digest of the config, standing in for the zkVM's key commitments. */
function configDigest(config: EngineConfig, label: string): string {
  return toHex(createHash('sha256').update(`zkvm-dev/${label}/v1\0${config.id}\0${config.app_vm_commit}`).digest());
}

/**
 * The verification baseline, with the zkVM's field names (client-conventions.md). The key
 * commitments are digests of the config: a dev config has no verifying keys.
 */
export function devBaseline(appExeCommit: string, config: EngineConfig): Record<string, unknown> {
  const vk = (name: string) => ({
    cached_commit: configDigest(config, `${name}/cached_commit`),
    vk_pre_hash: configDigest(config, `${name}/vk_pre_hash`),
  });
  return {
    app_exe_commit: appExeCommit,
    // 2^3 address spaces of 2^29 bytes in 8-byte chunks, as in the zkVM's default memory config.
    memory_dimensions: { addr_space_height: 3, address_height: 26 },
    num_user_pvs: config.public_values_bytes,
    app_vk_commit: vk('app_vk'),
    leaf_vk_commit: vk('leaf_vk'),
    internal_for_leaf_vk_commit: vk('internal_for_leaf_vk'),
    internal_recursive_vk_commit: vk('internal_recursive_vk'),
    expected_def_hook_commit: config.deferral_enabled ? configDigest(config, 'def_hook') : null,
  };
}
