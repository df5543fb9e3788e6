// The commands the Fleet page shows an operator to add an agent to this deployment (a
// module without JSX, so that a Node test reads them too: test/agent/host.test.ts).
const isLoopback = (host: string) => /^(localhost|127(\.\d+){3}|\[::1\])$/.test(host);

/**
 * The commands that add an agent to this deployment, with its own URL (where this page is
 * served: the Worker agents talk to). The token comes from the operator tool, printed once;
 * it is never shown here. Deployed: the packaged agent as a systemd service
 * (docs/gpu-hosts.md); locally (npm start): a second dev agent beside npm start's.
 */
export function addHostCommands(apiUrl: string): { where: string; commands: string } {
  const local = isLoopback(new URL(apiUrl).hostname);
  if (local)
    return {
      where: 'This is a local stack (npm start): a second agent on this machine, with a name and metrics port of its own.',
      commands: [
        '# in the repository: a token for it (printed once, on the last line)',
        'npm run admin -- create-agent-token --name local-2 --engines dev --configs all --local',
        `npm run agent -- --api-url ${apiUrl} --agent-token <the token> --engines dev --name local-2 --metrics-port 9465`,
      ].join('\n'),
    };
  return {
    where: 'On a GPU host with the packaged agent installed (docs/gpu-hosts.md), one agent per systemd instance.',
    commands: [
      '# in the repository, with wrangler logged in: a token for the host (printed once, on the last line; --env staging for staging)',
      'npm run admin -- create-agent-token --name <host> --engines openvm --configs <config id>|all --remote --env production',
      '# on the host',
      `printf 'PROVER_API_URL=${apiUrl}\\nPROVER_AGENT_TOKEN=%s\\nPROVER_ENGINES=openvm\\n' '<the token>' | sudo tee /etc/prover-agent/common.env >/dev/null`,
      'sudo chmod 0600 /etc/prover-agent/common.env',
      `printf 'PROVER_GPUS=8\\nPROVER_MACHINE_TYPE=<type>\\n' | sudo tee /etc/prover-agent/gpu0.env >/dev/null`,
      'sudo systemctl enable --now prover-agent@gpu0',
    ].join('\n'),
  };
}
