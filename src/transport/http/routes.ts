import type { IncomingMessage, ServerResponse } from 'node:http';
import { AuthRequestBody, RegisterRequestBody, ServiceError, ok, parseOrThrow, websocketChannelsOf, type ServiceConfig } from '../../protocol';
import type { Store } from '../../store';
import { bearerToken, type Authenticator } from '../auth/auth';
import type { RouteHandler, Router } from './http-server';
import { clientAddress, readJsonBody, sendEnvelope, sendJson } from './http-util';
import { registrableClientKey } from '../relay-link/client-keys';
import { machineIdOf } from '../relay-link/machine-identity';
import { relaySocketUrl } from '../pairing/pairing-link';
import { actorOf } from '../../commands/audit-actor';
import { loginEntry } from '../../commands/audit-records';

export interface RouteDeps {
  auth: Authenticator;
  store: Store;
  config: () => ServiceConfig;
}

/** What `GET /health` says of the service (docs/protocol.md): `ok` answers 200, anything else 503 with the reason. */
export type Health = { status: 'ok' } | { status: 'starting' } | { status: 'degraded' | 'failed'; reason: string };

/** The access token (the owner) as bearer: a session token is valid but not enough (403). */
function requireOwnerBearer(req: IncomingMessage, auth: Authenticator, what: string) {
  const token = bearerToken(req.headers.authorization);
  if (!token) throw new ServiceError('invalid_token', 'missing Authorization: Bearer <token>');
  const principal = auth.verify(token);
  if (!principal) throw new ServiceError('invalid_token', 'invalid token');
  if (principal.kind !== 'access') throw new ServiceError('unauthorized', `${what} needs the access token`);
}

/**
 * `GET /health`, which answers from the first connection on (the store may still be opening): 503 while
 * the service is not whole (starting, a full disk, damage), so a container health check or monitor sees it.
 */
export function healthRoute(startedAt: number, health: () => Promise<Health>): Map<string, RouteHandler> {
  return new Map([
    [
      'GET /health',
      async (_req: IncomingMessage, res: ServerResponse) => {
        const uptime_seconds = Math.floor((Date.now() - startedAt) / 1000);
        const state = await health();
        sendJson(res, state.status === 'ok' ? 200 : 503, { ...state, uptime_seconds });
      },
    ],
  ]);
}

/** The keys of coreRoutes: known before the store opens, so that any other path need not wait for it (service.ts). */
export const CORE_ROUTE_KEYS = ['POST /auth', 'POST /ws/register'] as const;

/** The routes that need the store (they wait for its open: see service.ts). */
export function coreRoutes(deps: RouteDeps): Map<string, RouteHandler> {
  const routes = new Map<string, RouteHandler>();

  const [authKey, registerKey] = CORE_ROUTE_KEYS;
  routes.set(authKey, async (req, res) => {
    try {
      deps.auth.refuseEarly(clientAddress(req));
    } catch (error) {
      req.resume();
      throw error;
    }
    const { value } = await readJsonBody(req);
    const body = parseOrThrow(AuthRequestBody, value, 'request');
    const session = await deps.auth.login(body.username, body.password, clientAddress(req));
    // A password user's sign-in is recorded before the token is handed out.
    await deps.store.audit.append(loginEntry(actorOf({ source: { kind: 'lan' }, principal: 'session', username: body.username, address: clientAddress(req) }), 'password'));
    sendEnvelope(res, ok(session));
  });

  routes.set(registerKey, async (req, res) => {
    // A registered key opens the relay tunnel to this machine and replaces the device's previous one: the owner's call.
    requireOwnerBearer(req, deps.auth, 'registering a device key');
    const { value } = await readJsonBody(req);
    const body = parseOrThrow(RegisterRequestBody, value, 'request');
    const publicKey = registrableClientKey(body.public_key);
    if (!publicKey) throw new ServiceError('invalid_request', 'public_key must be an X25519 public key: 32 bytes in base64url');
    const relay = websocketChannelsOf(deps.config())[0];
    if (!relay) throw new ServiceError('invalid_request', 'no relay configured: add a channel of type "websocket" with the relay url to service.json');
    const machineId = await machineIdOf(deps.store);
    await deps.store.registrations.upsert(body.machine_name, publicKey);
    sendEnvelope(res, ok({ machine_id: machineId, relay_url: relaySocketUrl(relay.url, machineId) }));
  });

  return routes;
}

/** A router over fixed routes plus live ones (webhook paths change with service.json). */
export function createRouter(fixed: Map<string, RouteHandler>, dynamic: Router = () => undefined): Router {
  return (method, path) => fixed.get(`${method} ${path}`) ?? dynamic(method, path);
}
