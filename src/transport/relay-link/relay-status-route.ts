import type { RelayLinkStatus } from '../../protocol';
import type { RouteHandler } from '../http/http-server';
import { sendJson } from '../http/http-util';

export const RELAY_HEALTH_PATH = '/health/relay';

/**
 * `GET /health/relay`: each relay link's state beside `/health`, for monitors and the editor. Names,
 * states and errors only: no URL, no token (the `relay_status` command, authenticated, adds the URL).
 */
export function relayStatusRoute(relay: { status(): RelayLinkStatus[] }): Map<string, RouteHandler> {
  return new Map<string, RouteHandler>([
    [
      `GET ${RELAY_HEALTH_PATH}`,
      async (_req, res) => {
        const relays = relay.status().map(({ name, state, since, last_error, clients, retry_at }) => ({ name, state, since, last_error, clients, retry_at }));
        sendJson(res, 200, { status: 'ok', relays });
      },
    ],
  ]);
}
