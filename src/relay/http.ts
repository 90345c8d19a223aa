import { fail, ok, type Envelope } from '../protocol/envelope';
import type { Logger } from '../log/logger';
import { BODY_INCOMPLETE_EVENT, IncompleteBody, httpStatusOf, type ErrorCode } from '../protocol/errors';
import { isAuthorized } from './auth';
import { MAX_REGISTER_BODY_BYTES } from './limits';
import type { Role } from './room';

/** What the relay does with one HTTP request (docs/relay.md, "HTTP"); the same for both deployments. */
export type RelayRoute =
  | { kind: 'health' }
  | { kind: 'register' }
  | { kind: 'socket'; role: Role; machineId: string }
  /** A GET the deployment may answer with a static file (the phone page), else 404. */
  | { kind: 'static'; path: string }
  | { kind: 'answer'; answer: RelayAnswer };

export interface RelayAnswer {
  status: number;
  body: Envelope | { status: 'ok' };
}

export interface RelayRequest {
  method: string;
  url: URL;
  authorization: string | null | undefined;
  /** Whether it asks for a WebSocket upgrade. */
  upgrade: boolean;
}

export const MACHINE_ID = /^[A-Za-z0-9_-]{1,128}$/;

export function errorAnswer(code: ErrorCode, message: string): RelayAnswer {
  return { status: httpStatusOf[code], body: fail(code, message) };
}

export const notFound = (): RelayAnswer => errorAnswer('not_found', 'not found');
export const notRegistered = (): RelayAnswer => errorAnswer('not_found', 'no machine registered with this machine_id');
export const tooManyClients = (): RelayAnswer => errorAnswer('rate_limited', 'this machine has too many clients; try again later');
export const tooManyPending = (): RelayAnswer => errorAnswer('rate_limited', 'too many connections from your address are awaiting this machine; try again later');

/** A positive number from a setting (tests shorten limits), else the default. */
export function positiveSetting(value: string | undefined, fallback: number): number {
  const parsed = Number(value);
  return parsed > 0 ? parsed : fallback;
}
const badToken = (): RelayAnswer => errorAnswer('invalid_token', 'invalid or missing AUTH_TOKEN');
const badMachineId = (): RelayAnswer => errorAnswer('invalid_request', 'machine_id must be 1 to 128 characters of A-Z a-z 0-9 _ -');

export function routeRequest(request: RelayRequest, authToken: string): RelayRoute {
  const { method, url } = request;
  const answer = (value: RelayAnswer): RelayRoute => ({ kind: 'answer', answer: value });
  if (url.pathname === '/health' && method === 'GET') return { kind: 'health' };
  if (url.pathname === '/register' && method === 'POST') {
    return isAuthorized(request.authorization, authToken) ? { kind: 'register' } : answer(badToken());
  }
  if (url.pathname === '/ws' && method === 'GET') {
    const machineId = url.searchParams.get('machine_id') ?? '';
    if (!MACHINE_ID.test(machineId)) return answer(badMachineId());
    const role = url.searchParams.get('role') ?? 'client';
    if (role !== 'machine' && role !== 'client') return answer(errorAnswer('invalid_request', 'role must be machine or client'));
    if (role === 'machine' && !isAuthorized(request.authorization, authToken)) return answer(badToken());
    if (!request.upgrade) return answer(errorAnswer('invalid_request', 'expected a WebSocket upgrade'));
    return { kind: 'socket', role, machineId };
  }
  if (method === 'GET' || method === 'HEAD') return { kind: 'static', path: url.pathname };
  return answer(notFound());
}

export const healthAnswer = (): RelayAnswer => ({ status: 200, body: { status: 'ok' } });

/** The machine_id of a POST /register body, or the answer refusing it. */
export function parseRegisterBody(text: string): { machineId: string } | { answer: RelayAnswer } {
  if (text.length > MAX_REGISTER_BODY_BYTES) return { answer: errorAnswer('payload_too_large', `body exceeds ${MAX_REGISTER_BODY_BYTES} bytes`) };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { answer: errorAnswer('invalid_request', 'body is not valid JSON') };
  }
  const machineId = (value as { machine_id?: unknown } | null)?.machine_id;
  if (typeof machineId !== 'string' || !MACHINE_ID.test(machineId)) return { answer: badMachineId() };
  return { machineId };
}

/**
 * A /register body the connection cut short (reading it failed): the client's, answered 400 if anyone is
 * left to read it, and logged once at info as the service logs one (IncompleteBody), nothing of the body.
 */
export function incompleteRegister(log: Logger, address: string): RelayAnswer {
  log.info(BODY_INCOMPLETE_EVENT, { method: 'POST', path: '/register', address });
  const error = new IncompleteBody();
  return errorAnswer(error.code, error.message);
}

/** The answer to a successful registration: where the machine and its clients connect. */
export function registeredAnswer(machineId: string, origin: string): RelayAnswer {
  return { status: 200, body: ok({ machine_id: machineId, url: socketUrl(origin, machineId) }) };
}

/** `https://host` -> `wss://host/ws?machine_id=...` (http -> ws). */
export function socketUrl(origin: string, machineId: string): string {
  const url = new URL('/ws', origin);
  url.protocol = url.protocol === 'http:' ? 'ws:' : 'wss:';
  url.searchParams.set('machine_id', machineId);
  return url.href;
}

export const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' } as const;
