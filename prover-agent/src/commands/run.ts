export async function main(_argv: string[]): Promise<number> {
  console.error('prover-agent: the daemon is not implemented yet');
  return 1;
}
