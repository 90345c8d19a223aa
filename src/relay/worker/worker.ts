import { PAGE_SECURITY_HEADERS } from '../../protocol/page-headers';
import { authTokenProblem } from '../auth';
import { consoleLogger, levelOf } from '../console-logger';
import { errorAnswer, healthAnswer, incompleteRegister, notFound, parseRegisterBody, registeredAnswer, routeRequest } from '../http';
import { MAX_REGISTER_BODY_BYTES } from '../limits';
import { answerResponse } from './responses';
import type { RelayEnv } from './runtime';

export { Relay } from './relay-object';

/** The page the phone opens at `/`. */
const INDEX_ASSET = '/phone.html';

/**
 * The Worker: checks each request (routes, machine_id, AUTH_TOKEN) and hands registrations and
 * sockets to the machine's Durable Object, one per machine_id.
 */
export default {
  async fetch(request: Request, env: RelayEnv): Promise<Response> {
    const authToken = env.AUTH_TOKEN ?? '';
    if (authTokenProblem(authToken)) {
      return answerResponse(errorAnswer('server_error', 'relay misconfigured: set the AUTH_TOKEN secret (at least 32 characters)'));
    }
    const url = new URL(request.url);
    const route = routeRequest(
      {
        method: request.method,
        url,
        authorization: request.headers.get('authorization'),
        upgrade: (request.headers.get('upgrade') ?? '').toLowerCase() === 'websocket',
      },
      authToken,
    );
    switch (route.kind) {
      case 'health':
        return answerResponse(healthAnswer());
      case 'answer':
        return answerResponse(route.answer);
      case 'register': {
        if (Number(request.headers.get('content-length')) > MAX_REGISTER_BODY_BYTES) {
          return answerResponse(errorAnswer('payload_too_large', `body exceeds ${MAX_REGISTER_BODY_BYTES} bytes`));
        }
        let text: string;
        try {
          text = await request.text();
        } catch {
          // The connection closed before the body's end.
          return answerResponse(incompleteRegister(consoleLogger(levelOf(env.LOG_LEVEL)), request.headers.get('cf-connecting-ip') ?? 'unknown'));
        }
        const parsed = parseRegisterBody(text);
        if ('answer' in parsed) return answerResponse(parsed.answer);
        await machineObject(env, parsed.machineId).fetch('https://relay.internal/register', { method: 'POST' });
        return answerResponse(registeredAnswer(parsed.machineId, url.origin));
      }
      case 'socket':
        return machineObject(env, route.machineId).fetch(request);
      case 'static':
        return staticAsset(env, request, route.path === '/' ? INDEX_ASSET : route.path);
    }
  },
};

/**
 * A file of the phone page from Workers static assets (they run behind the Worker: run_worker_first),
 * with the page's security headers; never a source map, which would publish the sources.
 */
async function staticAsset(env: RelayEnv, request: Request, path: string): Promise<Response> {
  if (!env.ASSETS || path.endsWith('.map')) return answerResponse(notFound());
  const asset = await env.ASSETS.fetch(new Request(new URL(path, request.url), request));
  if (asset.status === 404) return answerResponse(notFound());
  const response = new Response(asset.body, asset);
  for (const [name, value] of Object.entries(PAGE_SECURITY_HEADERS)) response.headers.set(name, value);
  return response;
}

function machineObject(env: RelayEnv, machineId: string) {
  return env.RELAY.get(env.RELAY.idFromName(machineId));
}
