// Types of node-version.js (plain JavaScript: it runs before Node can load TypeScript).
export function versionParts(text: string | undefined): [number, number, number];
export function satisfies(actual: string, required: string): boolean;
export function requireNode(packageJsonUrl: URL, hint: string): { name: string; version: string; engines?: { node?: string } };
