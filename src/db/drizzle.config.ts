import { defineConfig } from 'drizzle-kit';

// Run from the repository root: `npm run db:generate`.
export default defineConfig({
  dialect: 'sqlite',
  schema: './src/db/schema.ts',
  out: './migrations',
});
