// Light or dark: the system's choice until the toggle saves one (in localStorage).
const THEME_KEY = 'console-theme';
const root = document.documentElement;

/** Applies the saved choice; theme.js runs it before the first paint. */
export function applySavedTheme(): void {
  try {
    const saved = localStorage.getItem(THEME_KEY);
    if (saved === 'light' || saved === 'dark') root.dataset.theme = saved;
  } catch {
    // Storage refused (privacy settings): the system's choice stays.
  }
}

/** The other of the two themes than the one showing, saved for the next pages. */
export function toggleTheme(): void {
  const dark = root.dataset.theme ? root.dataset.theme === 'dark' : matchMedia('(prefers-color-scheme: dark)').matches;
  const next = dark ? 'light' : 'dark';
  root.dataset.theme = next;
  localStorage.setItem(THEME_KEY, next);
}
