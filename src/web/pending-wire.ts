/**
 * The page's tracker of waiting permission requests (protocol/pending-requests.ts), fed by one
 * connection: its events, and the service's list each time the session (re)opens. One per connection:
 * on the phone a machine's status and its chat's prompt cards share it.
 */
import { PendingRequests } from '../protocol/pending-requests';
import type { ServiceConnection } from './connection';

export function followPending(connection: ServiceConnection): PendingRequests {
  const pending = new PendingRequests();
  let open = false;
  connection.onEvent((event) => pending.hear(event));
  connection.onState((state) => {
    const wasOpen = open;
    open = state.state === 'open';
    if (open && !wasOpen) void pending.refresh(() => listPending(connection));
  });
  return pending;
}

/** The service's list; null when it cannot list (an older service); undefined when the connection dropped first. */
async function listPending(connection: ServiceConnection) {
  try {
    const answer = await connection.request({ type: 'list_pending_permissions' });
    return answer.status === 'ok' ? answer.data.requests : null;
  } catch {
    return undefined;
  }
}
