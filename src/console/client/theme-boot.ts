// Entry point of /console/static/theme.js, loaded (not deferred) in <head>: the saved
// light/dark choice applies before the body paints. A file, not inline: the CSP allows
// no inline script.
import { applySavedTheme } from './theme.ts';

applySavedTheme();
