// `prover-agent setup-config`, run as the operator runs it, against the stand-in CLI.
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FleetConfig } from '../../../prover-agent/src/protocol.ts';
import { CONFIG_ID, FAKE_CARGO, makeHost, OPENVM_TOML, runCli, type Host } from './harness.ts';

let host: Host;
let toml: string;
beforeEach(async () => {
  host = await makeHost({ setUp: false });
  toml = join(host.root, 'openvm.toml');
  await writeFile(toml, OPENVM_TOML);
});
afterEach(() => host.cleanup());

const setupConfig = (...args: string[]) =>
  runCli(['setup-config', CONFIG_ID, '--configs-dir', host.configsDir, '--cargo', FAKE_CARGO, ...args], host.env);

describe('setup-config', () => {
  it('prints the steps, with the exact zkVM commands, and changes nothing', async () => {
    const res = await setupConfig('--openvm-toml', toml, '--evm');
    expect(res.code).toBe(0);
    const lines = res.stdout.split('\n');
    expect(lines).toContain(`${FAKE_CARGO} openvm setup --evm`);
    expect(lines).toContain(
      `${FAKE_CARGO} openvm keygen --config ${host.configDir}/openvm.toml --manifest-path ${host.configDir}/Cargo.toml --target-dir ${host.configDir}/target`,
    );
    expect(lines).toContain(`cp ${toml} ${host.configDir}/openvm.toml`);
    expect(res.stdout).toContain(`Aggregation keys in ~/.openvm (${host.home}/.openvm)`);
    expect(await host.invocations()).toEqual([]);
  });

  it('--check lists what is missing and exits 1', async () => {
    const res = await setupConfig('--check', '--evm');
    expect(res.code).toBe(1);
    for (const missing of ['openvm.toml', 'Cargo.toml', 'src/main.rs', 'openvm/app.pk', 'openvm/app.vk', 'openvm/agg_prefix.pk']) {
      expect(res.stderr).toContain(`${host.configDir}/${missing}`);
    }
    for (const missing of [
      'internal_recursive.pk',
      'internal_recursive.vk',
      'root.pk',
      'halo2.pk',
      'params/kzg_bn254_10.srs',
      'params/kzg_bn254_24.srs',
      'halo2/src/v2.0-base/verifier.bytecode.json',
    ]) {
      expect(res.stderr).toContain(`${host.home}/.openvm/${missing}`);
    }
  });

  it('--run builds the directory with the zkVM tool, then checks it', async () => {
    const res = await setupConfig('--openvm-toml', toml, '--run');
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(res.stdout).toContain(`config directory ${host.configDir} is complete`);
    expect(await readFile(join(host.configDir, 'openvm.toml'), 'utf8')).toBe(OPENVM_TOML);
    expect((await host.invocations()).map((c) => c.argv.slice(0, 2))).toEqual([
      ['openvm', 'setup'],
      ['openvm', 'keygen'],
    ]);
    expect((await setupConfig('--check')).code).toBe(0);
    expect((await setupConfig('--check', '--evm')).code).toBe(1);
  });

  it('--run skips `cargo openvm setup` when the aggregation keys are there', async () => {
    expect((await setupConfig('--openvm-toml', toml, '--run')).code).toBe(0);
    const again = await setupConfig('--run');
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('skipping `cargo openvm setup`');
    expect((await host.invocations()).map((c) => c.argv[1])).toEqual(['setup', 'keygen', 'keygen']);
  });

  it('--run stops at a failing step', async () => {
    const res = await runCli(
      ['setup-config', CONFIG_ID, '--configs-dir', host.configsDir, '--cargo', FAKE_CARGO, '--openvm-toml', toml, '--run'],
      {
        ...host.env,
        FAKE_OPENVM_FAIL: 'keygen',
      },
    );
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('step failed (exit status 1)');
  });

  it('--evm without solc needs --download, as `cargo openvm setup --evm` does', async () => {
    const res = await setupConfig('--openvm-toml', toml, '--evm', '--run');
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('solc is not installed, please install solc or rerun with --download');
    const downloaded = await setupConfig('--openvm-toml', toml, '--evm', '--download', '--run');
    expect(downloaded.stderr).toBe('');
    expect(downloaded.code).toBe(0);
    expect(downloaded.stdout).toContain(`config directory ${host.configDir} is complete (with EVM keys)`);
    expect((await host.invocations()).at(-2)!.argv).toEqual(['openvm', 'setup', '--evm', '--download']);
  });

  it('refuses, before any tool step, a config the tool cannot key or a version it does not map', async () => {
    await writeFile(toml, `${OPENVM_TOML}[app_vm_config.system.config]\nnum_public_values = 64\n`);
    const wide = await setupConfig('--openvm-toml', toml, '--run');
    expect(wide.code).toBe(2);
    expect(wide.stderr).toMatch(
      /cannot key config .*\n {2}openvm\.toml sets num_public_values = 64: cargo openvm keygen only supports 32 \(v2\.0\.1:crates\/cli\/src\/commands\/keygen\.rs:130-147\)/,
    );
    const beta = await setupConfig('--openvm-version', '2.0.0-beta.2');
    expect(beta.code).toBe(2);
    expect(beta.stderr).toMatch(/openvm 2\.0\.0-beta\.2 is a pre-release/);
    expect(await host.invocations()).toEqual([]);
  });

  it('needs an openvm.toml to run, one config id, and known flags', async () => {
    expect((await setupConfig('--run')).code).toBe(2);
    expect((await runCli(['setup-config'], host.env)).code).toBe(2);
    expect((await setupConfig('--bogus')).code).toBe(2);
    expect((await setupConfig('--openvm-version', 'v1.4.0')).stderr).toMatch(/no command-line mapping for openvm 1\.4\.0/);
  });
});

/**
 * A stand-in for the service's config routes (the Worker's are tested in
 * test/worker/configs.test.ts and end to end in test/e2e/openvm-fleet.test.ts): the
 * record, and key uploads in parts (protocol.ts), digested rather than kept. Its
 * part size is tiny so that every key crosses several parts.
 */
async function fakeService(record: FleetConfig, partSize = 16) {
  const uploads: {
    name: string;
    auth: string | undefined;
    parts: number;
    size: number;
    sha256: string;
    declared: string;
    supersedes: number | null;
  }[] = [];
  const requests: string[] = [];
  const open = new Map<string, { name: string; parts: Map<number, Buffer>; declared: string; supersedes: number | null }>();
  let nextUpload = 0;
  const reply = (res: import('node:http').ServerResponse, status: number, body: unknown) =>
    void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const server: Server = createServer(async (req: IncomingMessage, res) => {
    requests.push(`${req.method} ${req.url} ${req.headers.authorization}`);
    // As the service: the record for an agent or a publisher token, key uploads for a publisher token only.
    if (req.headers.authorization !== 'Bearer at_test' && req.headers.authorization !== 'Bearer pt_test') return reply(res, 401, {});
    if (req.method === 'GET' && req.url === `/internal/v1/configs/${record.id}`) return reply(res, 200, record);
    const m = new RegExp(`^/internal/v1/configs/${record.id}/keys/(\\w+)/uploads(?:/(\\w+)(?:/(\\d+|complete))?)?$`).exec(req.url ?? '');
    if (!m) return reply(res, 404, {});
    if (req.headers.authorization !== 'Bearer pt_test') return reply(res, 401, { detail: 'agent tokens cannot publish' });
    const [, name, uploadId, step] = m as unknown as [string, string, string | undefined, string | undefined];
    if (req.method === 'POST' && !uploadId) {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const start = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { sha256?: string; supersedes?: number };
      if (!/^[0-9a-f]{64}$/.test(start.sha256 ?? '')) return reply(res, 422, {});
      const id = `u${++nextUpload}`;
      open.set(id, { name, parts: new Map(), declared: start.sha256!, supersedes: start.supersedes ?? null });
      return reply(res, 201, { upload_id: id, part_size: partSize });
    }
    const upload = uploadId ? open.get(uploadId) : undefined;
    if (!upload) return reply(res, 404, {});
    if (req.method === 'PUT' && step && /^\d+$/.test(step)) {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      if (String(body.length) !== req.headers['content-length'] || body.length > partSize) return reply(res, 400, {});
      upload.parts.set(Number(step), body);
      return reply(res, 200, { part_number: Number(step), etag: `e${step}` });
    }
    if (req.method === 'POST' && step === 'complete') {
      const whole = Buffer.concat([...upload.parts.entries()].sort((a, b) => a[0] - b[0]).map(([, b]) => b));
      const sha256 = createHash('sha256').update(whole).digest('hex');
      uploads.push({
        name,
        auth: req.headers.authorization,
        parts: upload.parts.size,
        size: whole.length,
        sha256,
        declared: upload.declared,
        supersedes: upload.supersedes,
      });
      open.delete(uploadId!);
      if (sha256 !== upload.declared) return reply(res, 422, { detail: 'digest mismatch' });
      const version = (upload.supersedes ?? 0) + 1;
      return reply(res, 200, { name, size: whole.length, version, sha256, verified: true, supersedes: upload.supersedes });
    }
    if (req.method === 'DELETE') {
      open.delete(uploadId!);
      return void res.writeHead(204).end();
    }
    reply(res, 404, {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    uploads,
    requests,
    /** Uploads started and neither completed nor aborted. */
    pending: () => open.size,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

const fleetRecord = (over: Partial<FleetConfig> = {}): FleetConfig => ({
  id: CONFIG_ID,
  engine: 'openvm',
  openvm_version: '2.0.1',
  stark_backend_version: '2.0.1',
  app_vm_commit: '',
  deferral_enabled: false,
  public_values_bytes: 32,
  active: true,
  openvm_toml: OPENVM_TOML,
  keys: {},
  ...over,
});

const sha256 = async (path: string) =>
  createHash('sha256')
    .update(await readFile(path))
    .digest('hex');

describe('setup-config with the service', () => {
  it('takes the config and its openvm.toml from the service, and --publish streams each key file to its name with the publisher token and its digest', async () => {
    const service = await fakeService(fleetRecord());
    try {
      const env = { ...host.env, PROVER_API_URL: service.url, PROVER_AGENT_TOKEN: 'at_test', PROVER_PUBLISHER_TOKEN: 'pt_test' };
      const res = await runCli(
        ['setup-config', CONFIG_ID, '--configs-dir', host.configsDir, '--cargo', FAKE_CARGO, '--evm', '--download', '--run', '--publish'],
        env,
      );
      expect(res.stderr).toBe('');
      expect(res.code).toBe(0);
      expect(await readFile(join(host.configDir, 'openvm.toml'), 'utf8')).toBe(OPENVM_TOML);
      expect(service.requests[0]).toBe(`GET /internal/v1/configs/${CONFIG_ID} Bearer at_test`);
      const dot = join(host.home, '.openvm');
      const files: Record<string, string> = {
        app_pk: join(host.configDir, 'openvm', 'app.pk'),
        app_vk: join(host.configDir, 'openvm', 'app.vk'),
        agg_pk: join(dot, 'internal_recursive.pk'),
        agg_vk: join(dot, 'internal_recursive.vk'),
        halo2_pk: join(dot, 'halo2.pk'),
        evm_verifier: join(dot, 'halo2', 'src', 'v2.0-base', 'verifier.bytecode.json'),
      };
      expect(service.uploads.map((u) => u.name)).toEqual(Object.keys(files));
      expect(service.pending()).toBe(0);
      for (const u of service.uploads) {
        // Every key crosses several parts (16 bytes each here), reassembled byte for byte.
        expect(u.parts).toBeGreaterThan(1);
        const digest = await sha256(files[u.name]);
        expect(u).toMatchObject({
          auth: 'Bearer pt_test',
          parts: Math.ceil(u.size / 16),
          sha256: digest,
          declared: digest,
          supersedes: null,
        });
        expect(res.stdout).toContain(`published ${u.name} version 1 (${u.size} bytes, sha256 ${digest}) from ${files[u.name]}`);
      }
    } finally {
      await service.close();
    }
  });

  it('publishes no EVM keys without --evm, and --openvm-toml overrides the service’s toml', async () => {
    const service = await fakeService(fleetRecord({ openvm_toml: '[app_vm_config.rv32i]\n' }));
    try {
      const env = { ...host.env, PROVER_API_URL: service.url, PROVER_AGENT_TOKEN: 'at_test', PROVER_PUBLISHER_TOKEN: 'pt_test' };
      const res = await runCli(
        ['setup-config', CONFIG_ID, '--configs-dir', host.configsDir, '--cargo', FAKE_CARGO, '--openvm-toml', toml, '--run', '--publish'],
        env,
      );
      expect(res.code).toBe(0);
      expect(await readFile(join(host.configDir, 'openvm.toml'), 'utf8')).toBe(OPENVM_TOML);
      expect(service.uploads.map((u) => u.name)).toEqual(['app_pk', 'app_vk', 'agg_pk', 'agg_vk']);
    } finally {
      await service.close();
    }
  });

  it('refuses a service config the tool cannot serve or key, before any step', async () => {
    for (const [record, why] of [
      [fleetRecord({ openvm_version: '2.0.0-rc.1' }), /openvm 2\.0\.0-rc\.1 is a pre-release/],
      [
        fleetRecord({ public_values_bytes: 64 }),
        /public_values_bytes 64: cargo openvm keygen only supports the default num_public_values \(32\)/,
      ],
      [fleetRecord({ engine: 'dev' }), /is for the dev engine, not openvm/],
    ] as const) {
      const service = await fakeService(record);
      try {
        const res = await runCli(['setup-config', CONFIG_ID, '--configs-dir', host.configsDir, '--cargo', FAKE_CARGO, '--run'], {
          ...host.env,
          PROVER_API_URL: service.url,
          PROVER_AGENT_TOKEN: 'at_test',
        });
        expect(res.code).toBe(2);
        expect(res.stderr).toMatch(why);
      } finally {
        await service.close();
      }
    }
    expect(await host.invocations()).toEqual([]);
  });

  it('prints the service’s openvm.toml into the steps, and --publish needs the service', async () => {
    const service = await fakeService(fleetRecord());
    try {
      const res = await runCli(['setup-config', CONFIG_ID, '--configs-dir', host.configsDir, '--cargo', FAKE_CARGO], {
        ...host.env,
        PROVER_API_URL: service.url,
        PROVER_AGENT_TOKEN: 'at_test',
      });
      expect(res.code).toBe(0);
      expect(res.stdout).toContain(`cat > ${host.configDir}/openvm.toml <<'EOF'\n${OPENVM_TOML}EOF`);
    } finally {
      await service.close();
    }
    const offline = await setupConfig('--publish');
    expect(offline.code).toBe(2);
    expect(offline.stderr).toMatch(/--publish needs the service/);
  });

  it('--publish needs the publisher token: an agent token alone publishes nothing', async () => {
    const service = await fakeService(fleetRecord());
    try {
      await setupConfig('--openvm-toml', toml, '--run');
      const res = await runCli(['setup-config', CONFIG_ID, '--configs-dir', host.configsDir, '--cargo', FAKE_CARGO, '--publish'], {
        ...host.env,
        PROVER_API_URL: service.url,
        PROVER_AGENT_TOKEN: 'at_test',
      });
      expect(res.code).toBe(2);
      expect(res.stderr).toMatch(/--publisher-token .* an agent token cannot publish/);
      expect(service.requests).toEqual([]);
    } finally {
      await service.close();
    }
  });

  it('with only the publisher token: reads the record with it, skips keys published with the same digest, and replaces a different one only with --supersede', async () => {
    expect((await setupConfig('--openvm-toml', toml, '--run')).code).toBe(0);
    const appPk = join(host.configDir, 'openvm', 'app.pk');
    const appVk = join(host.configDir, 'openvm', 'app.vk');
    const published = {
      app_vk: { version: 1, sha256: await sha256(appVk), size: 1 },
      app_pk: { version: 3, sha256: '0'.repeat(64), size: 1 },
    };
    const service = await fakeService(fleetRecord({ keys: published }));
    try {
      const publish = (...flags: string[]) =>
        runCli(['setup-config', CONFIG_ID, '--configs-dir', host.configsDir, '--cargo', FAKE_CARGO, '--publish', ...flags], {
          ...host.env,
          PROVER_API_URL: service.url,
          PROVER_PUBLISHER_TOKEN: 'pt_test',
        });
      const refused = await publish();
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(
        `app_pk of ${CONFIG_ID} is published (version 3, sha256 ${'0'.repeat(64)}) and ${appPk} differs (sha256 ${await sha256(appPk)}); pass --supersede`,
      );
      expect(service.uploads).toEqual([]);
      expect(service.requests[0]).toBe(`GET /internal/v1/configs/${CONFIG_ID} Bearer pt_test`);

      const res = await publish('--supersede');
      expect(res.code).toBe(0);
      expect(res.stdout).toContain(`app_vk is published already with this digest (version 1, sha256 ${published.app_vk.sha256}); skipped`);
      expect(service.uploads.map((u) => [u.name, u.supersedes])).toEqual([
        ['app_pk', 3],
        ['agg_pk', null],
        ['agg_vk', null],
      ]);
      expect(res.stdout).toContain(`published app_pk version 4 (`);
    } finally {
      await service.close();
    }
  });
});
