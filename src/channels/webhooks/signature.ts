import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Standard Webhooks (https://www.standardwebhooks.com) signing, as docs/protocol.md gives it:
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, keyed with the base64-decoded
 * part after `whsec_` where the secret has that prefix, else with the secret's UTF-8 bytes.
 */

/** Largest distance between a signed request's `webhook-timestamp` and now. */
export const SIGNATURE_TOLERANCE_SECONDS = 5 * 60;

const WHSEC_PREFIX = 'whsec_';

export function signingKey(secret: string): Buffer {
  return secret.startsWith(WHSEC_PREFIX) ? Buffer.from(secret.slice(WHSEC_PREFIX.length), 'base64') : Buffer.from(secret, 'utf8');
}

function digest(key: Buffer, id: string, timestamp: string, body: Buffer | string): Buffer {
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
}

/** The `webhook-signature` header value for one request. */
export function signatureHeader(secret: string, id: string, timestamp: number | string, body: Buffer | string): string {
  return `v1,${digest(signingKey(secret), id, String(timestamp), body).toString('base64')}`;
}

/** The three Standard Webhooks headers of a request, when all are present. */
export interface SignedHeaders {
  id: string;
  timestamp: string;
  signature: string;
}

export function signedHeadersOf(headers: Record<string, string | string[] | undefined>): SignedHeaders | undefined {
  const one = (name: string) => {
    const value = headers[name];
    return typeof value === 'string' && value !== '' ? value : undefined;
  };
  const id = one('webhook-id');
  const timestamp = one('webhook-timestamp');
  const signature = one('webhook-signature');
  return id && timestamp && signature ? { id, timestamp, signature } : undefined;
}

/** Whether the timestamp is unix seconds within the tolerance of `nowMs`. */
export function timestampFresh(timestamp: string, nowMs: number, toleranceSeconds = SIGNATURE_TOLERANCE_SECONDS): boolean {
  if (!/^\d{1,12}$/.test(timestamp)) return false;
  return Math.abs(Math.floor(nowMs / 1000) - Number(timestamp)) <= toleranceSeconds;
}

/**
 * Whether one of the space-separated `v1,<base64>` signatures is the body's, compared in constant time.
 * (Several signatures let a sender rotate secrets.) The timestamp is checked separately.
 */
export function signatureValid(secret: string, signed: SignedHeaders, body: Buffer): boolean {
  const expected = digest(signingKey(secret), signed.id, signed.timestamp, body);
  let valid = false;
  for (const part of signed.signature.split(' ')) {
    const comma = part.indexOf(',');
    if (comma < 0 || part.slice(0, comma) !== 'v1') continue;
    const presented = Buffer.from(part.slice(comma + 1), 'base64');
    // No early exit: every candidate costs the same whichever matches.
    if (presented.length === expected.length && timingSafeEqual(presented, expected)) valid = true;
  }
  return valid;
}

/** Constant-time equality of two secrets of any length (compares their SHA-256 digests). */
export function secretsEqual(presented: string, secret: string): boolean {
  const a = createHash('sha256').update(presented, 'utf8').digest();
  const b = createHash('sha256').update(secret, 'utf8').digest();
  return timingSafeEqual(a, b);
}
