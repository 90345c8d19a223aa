import { MIN_AUTH_TOKEN_LENGTH } from './limits';

/**
 * AUTH_TOKEN checks, with no platform API, so the Worker and Node share them. The comparison takes
 * the same time whatever the given token holds, so timing tells an attacker nothing about it.
 */

/** Whether `given` equals `expected`, in time that depends only on the length of `expected`. */
export function tokensEqual(given: string, expected: string): boolean {
  const a = new TextEncoder().encode(given);
  const b = new TextEncoder().encode(expected);
  let diff = a.length ^ b.length;
  for (let i = 0; i < b.length; i += 1) diff |= (a[i % Math.max(a.length, 1)] ?? 0) ^ b[i];
  return diff === 0;
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | null | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match?.[1];
}

/** Whether the request's Authorization header carries the relay's AUTH_TOKEN. */
export function isAuthorized(header: string | null | undefined, authToken: string): boolean {
  return tokensEqual(bearerToken(header) ?? '', authToken);
}

/** Why an AUTH_TOKEN cannot be used (never quoting it), or undefined when it is fine. */
export function authTokenProblem(token: string | undefined): string | undefined {
  if (!token) return 'AUTH_TOKEN is not set';
  if (token.length < MIN_AUTH_TOKEN_LENGTH) return `AUTH_TOKEN must be at least ${MIN_AUTH_TOKEN_LENGTH} characters`;
  return undefined;
}
