/**
 * Tells the service whether this page is on screen (`client_state`), right after authenticating and on
 * every change: while it is, the service pushes nothing to this device, since the page shows the event
 * itself (docs/protocol.md, "Web Push"). An open socket alone says nothing: a phone keeps it in the
 * background.
 */
import type { ServiceConnection } from '../connection';
import { pushRequest } from './push-commands';

export function reportVisibility(connection: ServiceConnection, deviceId: string): void {
  const report = () => {
    if (connection.state.state !== 'open') return;
    pushRequest(connection, 'client_state', { device_id: deviceId, visible: document.visibilityState === 'visible' }).catch(() => undefined);
  };
  connection.onState((state) => {
    if (state.state === 'open') report();
  });
  document.addEventListener('visibilitychange', report);
}
