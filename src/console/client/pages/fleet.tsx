// The fleet, for service operators: reloaded every 5 seconds.
import { useState } from 'hono/jsx/dom';
import type { Fleet } from '../../ui/api-types.ts';
import { FleetView } from '../../ui/views/fleet.tsx';
import { attempt } from '../chrome.ts';
import { Notice } from '../../ui/widgets.tsx';
import { accountApi } from '../endpoints.ts';
import { useInterval } from '../hooks.ts';
import type { SignedInPage } from '../signed-in.ts';

const RELOAD_MS = 5000;

function FleetPage({ initial }: { initial: Fleet }) {
  const [fleet, setFleet] = useState(initial);
  useInterval(() => void attempt(async () => setFleet(await accountApi.fleet())), RELOAD_MS);
  // The Worker serving this page is the one agents talk to.
  return <FleetView fleet={fleet} apiUrl={location.origin} />;
}

export const fleet: SignedInPage = async ({ user }) => {
  if (!user.is_operator)
    return (
      <Notice id="fleet-refused" title="The fleet page is for the service’s operators.">
        <p>It shows the prover agents and the queue of the whole service, not of one organization.</p>
      </Notice>
    );
  return <FleetPage initial={await accountApi.fleet()} />;
};
