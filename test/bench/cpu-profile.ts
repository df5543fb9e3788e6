// A CPU profile of the Worker's own isolate, taken through wrangler dev's devtools
// inspector (the Chrome DevTools Protocol's Profiler domain), for a bench's `--profile`:
// where the Worker's JavaScript spends its time while the bench runs. The runtime's
// local D1, R2 and queues run elsewhere (Miniflare's own services), so what it shows is
// the service's code, the libraries it bundles, and the runtime's calls it makes.
import WebSocket from 'ws';

/** A .cpuprofile as the Profiler domain returns it (what Chrome's devtools open). */
export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Connects to the inspector at `port` and starts profiling; `stop()` ends it and answers the profile. */
export async function startCpuProfile(port: number, samplingIntervalUs = 200): Promise<{ stop(): Promise<CpuProfile> }> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as { webSocketDebuggerUrl: string }[];
  if (!targets[0]) throw new Error(`the inspector on port ${port} lists no Worker`);
  const ws = new WebSocket(targets[0].webSocketDebuggerUrl);
  // ws, not Node's own WebSocket: wrangler's inspector proxy refuses the latter's handshake.
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', (err) => reject(new Error(`cannot connect to the inspector on port ${port}: ${err.message}`)));
  });
  let nextId = 1;
  const pending = new Map<number, (result: unknown) => void>();
  ws.on('message', (data) => {
    const msg = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: { message: string } };
    if (msg.id === undefined) return;
    if (msg.error) throw new Error(`inspector: ${msg.error.message}`);
    pending.get(msg.id)?.(msg.result);
    pending.delete(msg.id);
  });
  const send = (method: string, params: object = {}) =>
    new Promise<unknown>((resolve) => {
      const id = nextId++;
      pending.set(id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
  await send('Profiler.enable');
  await send('Profiler.setSamplingInterval', { interval: samplingIntervalUs });
  await send('Profiler.start');
  return {
    async stop() {
      const { profile } = (await send('Profiler.stop')) as { profile: CpuProfile };
      ws.close();
      return profile;
    },
  };
}

/** Self time by function and by source file, heaviest first: the lines a bench prints. */
export function summarizeProfile(profile: CpuProfile, top = 25): string[] {
  const self = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++)
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0));
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const node of profile.nodes) {
    const us = self.get(node.id) ?? 0;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') {
      idle += us;
      continue;
    }
    total += us;
    const file = url.replace(/^.*?(node_modules\/|src\/|prover-agent\/)/, '$1') || '(runtime)';
    byFunction.set(
      `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`,
      (byFunction.get(`${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`) ?? 0) + us,
    );
    const module = file.startsWith('node_modules/')
      ? file
          .split('/')
          .slice(0, file.split('/')[1].startsWith('@') ? 3 : 2)
          .join('/')
      : file;
    byFile.set(module, (byFile.get(module) ?? 0) + us);
  }
  const rows = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => `  ${(us / 1000).toFixed(0).padStart(7)} ms  ${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`);
  return [
    `worker CPU profile: ${(total / 1000).toFixed(0)} ms busy, ${(idle / 1000).toFixed(0)} ms idle`,
    'self time by file:',
    ...rows(byFile),
    'self time by function:',
    ...rows(byFunction),
  ];
}
