// `prover-agent [command] [flags]`: dispatches to one module per command.
const commands: Record<string, () => Promise<{ main(argv: string[]): Promise<number> }>> = {
  run: () => import('./commands/run.ts'),
  execute: () => import('./commands/execute.ts'),
  'setup-config': () => import('./commands/setup-config.ts'),
};

const usage = `usage: prover-agent [run] [flags]              run the agent daemon (default)
       prover-agent execute --elf <file> [...]   execute a guest with the dev executor
       prover-agent setup-config <cfg_id> [...]  prepare a config directory for the openvm engine
       prover-agent --version                    print the agent's version
Run a command with --help for its flags.`;

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    console.log(usage);
    return 0;
  }
  const name = argv[0] && !argv[0].startsWith('-') ? argv[0] : 'run';
  // A name of the table's own: `prover-agent constructor` is an unknown command, not Object's.
  const load = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!load) {
    console.error(`prover-agent: unknown command '${name}'\n${usage}`);
    return 2;
  }
  const rest = name === argv[0] ? argv.slice(1) : argv;
  return (await load()).main(rest);
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exitCode = 1;
  },
);
