import * as z from 'zod';
import { lazySchema } from './lazy-schema';

/** Error codes of the protocol (service-spec section 7, plus docs/protocol.md's three). */
export const ErrorCode = lazySchema(() => z.enum(['invalid_token', 'unauthorized', 'not_found', 'invalid_request', 'server_error', 'rate_limited', 'payload_too_large', 'conflict']));
export type ErrorCode = z.infer<typeof ErrorCode>;

/** HTTP status for each error code (docs/protocol.md, section HTTP). */
export const httpStatusOf: Record<ErrorCode, number> = {
  invalid_request: 400,
  invalid_token: 401,
  unauthorized: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  rate_limited: 429,
  server_error: 500,
};

/**
 * An error meant for the client: its message is shown as is, so it must never hold a secret or a
 * stack trace. Anything else thrown inside a handler becomes a generic server_error.
 */
export class ServiceError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Seconds a client should wait (rate_limited). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'ServiceError';
  }
}

/**
 * The connection closed before the whole body arrived: the client's doing (the network's), answered 400
 * if anyone is left to read it, and logged once at info as BODY_INCOMPLETE_EVENT (the service's HTTP
 * server groups a burst of them in a counted line: transport/http/body-incomplete-log.ts; both relays,
 * whose only body is an AUTH_TOKEN holder's /register, a line each), never as an internal error: no
 * stack, nothing of the body.
 */
export class IncompleteBody extends ServiceError {
  constructor() {
    super('invalid_request', 'the body did not arrive whole: the connection closed before its end');
  }
}

/** The log event of a body cut short (IncompleteBody), with the request's method, path and address. */
export const BODY_INCOMPLETE_EVENT = 'http.body_incomplete';

/** Turns a zod error into one line naming each bad field, e.g. `limit: expected integer`. */
export function describeZodError(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.map(String).join('.');
      return path ? `${path}: ${issue.message}` : issue.message;
    })
    .join('; ');
}

/** Parses `value` with `schema`, or throws invalid_request naming the bad fields. */
export function parseOrThrow<T extends z.ZodType>(schema: T, value: unknown, what: string): z.infer<T> {
  const result = schema.safeParse(value);
  if (!result.success) {
    throw new ServiceError('invalid_request', `invalid ${what}: ${describeZodError(result.error)}`);
  }
  return result.data;
}
