import type { IncomingMessage, ServerResponse } from 'node:http';
import { IncompleteBody, ServiceError, fail, httpStatusOf, type Envelope } from '../../protocol';

/** Largest accepted HTTP body and WebSocket frame (docs/protocol.md). */
export const MAX_BODY_BYTES = 1024 * 1024;

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

/** Sends an envelope with the status code docs/protocol.md gives its error code (200 for ok). */
export function sendEnvelope(res: ServerResponse, envelope: Envelope, okStatus = 200, retryAfterSeconds?: number): void {
  const status = envelope.status === 'ok' ? okStatus : httpStatusOf[envelope.code];
  sendJson(res, status, envelope, retryAfterSeconds ? { 'retry-after': String(retryAfterSeconds) } : {});
}

/** The answer to a request no route takes (404). */
export function noRoute(method: string, path: string): ServiceError {
  return new ServiceError('not_found', `no route for ${method} ${path}`);
}

export function sendError(res: ServerResponse, error: ServiceError): void {
  sendEnvelope(res, fail(error.code, error.message), 200, error.retryAfterSeconds);
}

/**
 * Reads a JSON object body of at most `limit` bytes. Refuses early on Content-Length, and stops
 * reading (413) as soon as the limit is passed, so a huge body never sits in memory.
 */
export async function readJsonBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<{ value: Record<string, unknown>; raw: Buffer }> {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json') throw new ServiceError('invalid_request', 'Content-Type must be application/json');
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    throw new ServiceError('payload_too_large', `body exceeds ${limit} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) {
        req.resume();
        throw new ServiceError('payload_too_large', `body exceeds ${limit} bytes`);
      }
      chunks.push(chunk);
    }
  } catch (error) {
    // Node's "aborted" (ECONNRESET): the connection closed before the body's end.
    throw error instanceof ServiceError ? error : new IncompleteBody();
  }
  const raw = Buffer.concat(chunks);
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new ServiceError('invalid_request', 'body is not valid JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ServiceError('invalid_request', 'body must be a JSON object');
  }
  return { value: value as Record<string, unknown>, raw };
}

export function clientAddress(req: IncomingMessage): string {
  return req.socket.remoteAddress ?? 'unknown';
}
