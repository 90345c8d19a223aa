import * as z from 'zod';
import { ErrorCode } from './errors';
import { lazySchema } from './lazy-schema';

/** Longest request id a client may choose (characters). */
const MAX_REQUEST_ID_CHARS = 128;
/** A client-chosen request id, echoed on every response and event of that request. */
export const RequestId = lazySchema(() => z.union([z.string().max(MAX_REQUEST_ID_CHARS), z.number().finite()]));
export type RequestId = z.infer<typeof RequestId>;

/**
 * A request id that RequestId plainly accepts, without zod (a bare command's frame, command-frame.ts): a
 * finite number, or a string of at most MAX_REQUEST_ID_CHARS UTF-16 units. False may still be one zod
 * accepts (zod counts a longer string's characters otherwise): the caller then asks zod.
 */
export function isRequestId(value: unknown): value is RequestId {
  return typeof value === 'string' ? value.length <= MAX_REQUEST_ID_CHARS : typeof value === 'number' && Number.isFinite(value);
}

export const OkEnvelope = lazySchema(() =>
  z.object({
    status: z.literal('ok'),
    data: z.record(z.string(), z.unknown()),
    id: RequestId.optional(),
  }),
);
export const ErrorEnvelope = lazySchema(() =>
  z.object({
    status: z.literal('error'),
    error: z.string(),
    code: ErrorCode,
    id: RequestId.optional(),
  }),
);
export const Envelope = lazySchema(() => z.discriminatedUnion('status', [OkEnvelope, ErrorEnvelope]));
export type OkEnvelope = z.infer<typeof OkEnvelope>;
export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;
export type Envelope = z.infer<typeof Envelope>;

export function ok(data: object, id?: RequestId): OkEnvelope {
  // Every command's result is an object (protocol/results.ts); the envelope carries it as it is.
  const record = data as Record<string, unknown>;
  return id === undefined ? { status: 'ok', data: record } : { status: 'ok', data: record, id };
}

export function fail(code: ErrorCode, error: string, id?: RequestId): ErrorEnvelope {
  return id === undefined ? { status: 'error', error, code } : { status: 'error', error, code, id };
}

/**
 * A conversation's events carry `seq` for the clients following it (follow_conversation): increasing by
 * one per event of that conversation, so a client that reconnects asks for what came after the last it saw.
 */
export const Seq = lazySchema(() => z.number().int().optional());
