// docs/teams.md's roles table is the one permissions table (src/auth/permissions.ts) as
// Markdown: a change to either without the other fails here, with the table to paste.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ACTIONS, KEY_SCOPES, may, PERMISSIONS, ROLE_ORDER } from '../../src/auth/permissions.ts';
import { ROOT } from '../../src/tools/wrangler.ts';

/** The table docs/teams.md's Roles section shows, between its markers. */
export function rolesTable(): string {
  const rows = ACTIONS.map((a) => `| ${PERMISSIONS[a].covers} | \`${a}\` | ${ROLE_ORDER.map((r) => (may(r, a) ? '✓' : '')).join(' | ')} |`);
  return [`| | action | ${ROLE_ORDER.join(' | ')} |`, `|---|---|${ROLE_ORDER.map(() => '---').join('|')}|`, ...rows].join('\n');
}

describe('docs/teams.md', () => {
  it('shows the roles table of src/auth/permissions.ts', () => {
    const teams = readFileSync(path.join(ROOT, 'docs', 'teams.md'), 'utf8');
    const shown = /<!-- roles: generated from src\/auth\/permissions.ts.*-->\n([\s\S]*?)\n<!-- end roles -->/.exec(teams)?.[1];
    expect(shown?.trim()).toBe(rolesTable());
  });

  it('names every key scope (in docs/callers.md, where the scopes are explained)', () => {
    const callers = readFileSync(path.join(ROOT, 'docs', 'callers.md'), 'utf8');
    for (const scope of Object.keys(KEY_SCOPES)) expect(callers).toMatch(new RegExp(`^\\| \`${scope}\``, 'm'));
  });
});
