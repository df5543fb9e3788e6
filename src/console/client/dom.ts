// Small browser helpers the pages share.
import { say } from './chrome.ts';

/** The form an event (submit, input, change) was listened for on. */
export const formOf = (event: Event) => event.currentTarget as HTMLFormElement;

/** A form field's text ('' when absent). */
export const field = (form: HTMLFormElement, name: string) => String(new FormData(form).get(name) ?? '');

/** A form's filled-in fields as a query string. */
export function formQuery(form: HTMLFormElement): URLSearchParams {
  const query = new URLSearchParams();
  for (const [name, value] of new FormData(form)) if (value) query.set(name, String(value));
  return query;
}

/** A query string with these values set. */
export function withParams(query: URLSearchParams, params: Record<string, string | number>): URLSearchParams {
  const next = new URLSearchParams(query);
  for (const [name, value] of Object.entries(params)) next.set(name, String(value));
  return next;
}

/** The last segment of this page's path: the record it shows. */
export const pathId = () => decodeURIComponent(location.pathname.split('/').pop() ?? '');

/** A parameter of the part after `#`, where one-time links carry their token (never sent to a server). */
export const hashParam = (name: string) => new URLSearchParams(location.hash.slice(1)).get(name);

/** Copies text to the clipboard, saying whether it worked. */
export async function copyText(text: string | undefined): Promise<void> {
  try {
    await navigator.clipboard.writeText(text ?? '');
    say('Copied to the clipboard.');
  } catch {
    say('Select the text and copy it.');
  }
}

/** Hands a downloaded file to the browser to save. */
export function saveFile(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = Object.assign(document.createElement('a'), { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
