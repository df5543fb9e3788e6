// openvmConfigProblems: what `admin create-config --engine openvm` refuses, and why.
import { describe, expect, it } from 'vitest';
import { openvmConfigProblems } from '../../../prover-agent/src/protocol.ts';

const KEYGEN = 'v2.0.1:crates/cli/src/commands/keygen.rs:130-147';

describe('openvmConfigProblems', () => {
  it('accepts a 2.0 final release with the default 32 bytes of public values', () => {
    expect(openvmConfigProblems({ openvm_version: '2.0.0', public_values_bytes: 32 })).toEqual([]);
    expect(
      openvmConfigProblems({
        openvm_version: 'v2.0.1',
        public_values_bytes: 32,
        openvm_toml: '[app_vm_config.rv32i]\n[app_vm_config.io]\n',
      }),
    ).toEqual([]);
    // Stating the defaults is fine.
    const defaults =
      '[app_vm_config.system.config]\nnum_public_values = 32\n[app_vm_config.system.config.memory_config]\naddr_space_height = 3\npointer_max_bits = 29\n';
    expect(openvmConfigProblems({ openvm_version: '2.0.0', public_values_bytes: 32, openvm_toml: defaults })).toEqual([]);
  });

  it('refuses pre-releases, unknown majors and unreadable versions, alone', () => {
    expect(openvmConfigProblems({ openvm_version: '2.0.0-beta.2', public_values_bytes: 64 })).toEqual([
      'openvm 2.0.0-beta.2 is a pre-release; this agent maps final releases only (2.0.0 and later 2.x releases): pre-releases have other flags and JSON',
    ]);
    expect(openvmConfigProblems({ openvm_version: '1.4.0', public_values_bytes: 32 })).toEqual([
      'no command-line mapping for openvm 1.4.0 (this agent knows 2.0.0 and later 2.x releases)',
    ]);
    expect(openvmConfigProblems({ openvm_version: 'latest', public_values_bytes: 32 })).toEqual(["cannot read openvm_version 'latest'"]);
  });

  it('refuses public values other than the default keygen supports, citing the source', () => {
    expect(openvmConfigProblems({ openvm_version: '2.0.0', public_values_bytes: 64 })).toEqual([
      `public_values_bytes 64: cargo openvm keygen only supports the default num_public_values (32) (${KEYGEN})`,
    ]);
  });

  it('reads num_public_values and the memory dimensions out of the openvm.toml', () => {
    const toml = [
      '[app_vm_config.rv32i]',
      '[app_vm_config.system.config]',
      'num_public_values = 64 # wider',
      '[ app_vm_config.system.config.memory_config ]',
      'pointer_max_bits = 30',
    ].join('\n');
    expect(openvmConfigProblems({ openvm_version: '2.0.1', public_values_bytes: 32, openvm_toml: toml })).toEqual([
      `openvm.toml sets num_public_values = 64: cargo openvm keygen only supports 32 (${KEYGEN})`,
      'openvm.toml sets num_public_values = 64 but the config says public_values_bytes 32',
      `openvm.toml changes the memory dimensions (addr_space_height 3, pointer_max_bits 30): cargo openvm keygen only supports the defaults (3, 29) (${KEYGEN})`,
    ]);
  });
});
