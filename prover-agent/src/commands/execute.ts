export async function main(_argv: string[]): Promise<number> {
  console.error('prover-agent: not implemented yet');
  return 1;
}
