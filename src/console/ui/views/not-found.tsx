// The answer to a console URL that is no page (status 404; the console's API keeps its
// JSON 404): where to go instead.
import { links } from '../site.ts';

export const NotFoundView = ({ path }: { path?: string }) => (
  <div id="not-found" class="card notice">
    <p class="empty-title">
      {'There is no console page at '}
      <code>{path ?? 'this address'}</code>.
    </p>
    <p>
      {'Check the address, or start from the '}
      <a href={links.home}>overview</a>
      {' (you sign in first if you are not signed in).'}
    </p>
  </div>
);
