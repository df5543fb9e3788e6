// `npm run bench:password`: CPU time of one console password hash, the work every
// sign-in does. Compares what src/features/accounts/password.ts uses (WebCrypto PBKDF2-HMAC-SHA-256,
// 100,000 iterations: the most workerd allows) with a pure-JavaScript scrypt
// (@noble/hashes) at OWASP-like parameters, the alternative that runs in a Worker
// (argon2 libraries are WebAssembly that compile at run time, which Workers forbid).
// Node's WebCrypto is OpenSSL and workerd's BoringSSL: both native, the same order.
import { scrypt } from '@noble/hashes/scrypt.js';
import { hashPassword, PASSWORD_ITERATIONS, verifyPassword } from '../../src/features/accounts/password.ts';

const RUNS = Number(process.env.RUNS ?? 10);

async function measure(name: string, fn: () => Promise<unknown> | unknown): Promise<void> {
  await fn(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const cpu = process.cpuUsage();
    await fn();
    const used = process.cpuUsage(cpu);
    times.push((used.user + used.system) / 1000);
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)];
  console.log(
    `${name.padEnd(52)} median ${median.toFixed(1).padStart(7)} ms CPU   min ${times[0].toFixed(1)}   max ${times.at(-1)!.toFixed(1)}`,
  );
}

const password = 'correct horse battery staple';
const salt = crypto.getRandomValues(new Uint8Array(16));
const stored = await hashPassword(password);

console.log(`one hash, ${RUNS} runs each (Node ${process.version})`);
await measure(`pbkdf2-sha256 ${PASSWORD_ITERATIONS} iterations (hashPassword)`, () => hashPassword(password));
await measure(`pbkdf2-sha256 ${PASSWORD_ITERATIONS} iterations (verifyPassword)`, () => verifyPassword(password, stored));
await measure('scrypt N=2^14 r=8 p=1 (16 MiB), @noble/hashes', () => scrypt(password, salt, { N: 2 ** 14, r: 8, p: 1, dkLen: 32 }));
await measure('scrypt N=2^15 r=8 p=1 (32 MiB), @noble/hashes', () => scrypt(password, salt, { N: 2 ** 15, r: 8, p: 1, dkLen: 32 }));
await measure('scrypt N=2^17 r=8 p=1 (128 MiB, OWASP), @noble/hashes', () => scrypt(password, salt, { N: 2 ** 17, r: 8, p: 1, dkLen: 32 }));
