/**
 * Small facts about a failed request that every HTTP provider needs to word its error: the system
 * error code, the innermost message, whether it was an abort, and which parts of a configured URL
 * may carry credentials.
 */

/** Codes of a connection that could not be made at all (as opposed to one that broke). */
export const UNREACHABLE_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT']);

/** The first system-style code (`ECONNRESET`, `UND_ERR_SOCKET`) along the `cause` chain. */
export function codeOf(error: unknown): string | undefined {
  let current = error;
  for (let depth = 0; depth < 6 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^[A-Z][A-Z0-9_]+$/.test(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The deepest non-empty message along the `cause` chain (fetch hides the useful one inside). */
export function innermostMessage(error: unknown): string {
  let message = '';
  let current = error;
  for (let depth = 0; depth < 6 && current && typeof current === 'object'; depth++) {
    const text = (current as { message?: unknown }).message;
    if (typeof text === 'string' && text) message = text;
    current = (current as { cause?: unknown }).cause;
  }
  return message;
}

export function isAbortError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'AbortError';
}

/** The URL when it parses and is http(s). */
export function httpUrl(url: string): URL | undefined {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** User info and query values of a URL: places where people put keys. */
export function urlSecrets(url: string): string[] {
  try {
    const parsed = new URL(url);
    return [parsed.username, parsed.password, ...parsed.searchParams.values()].map(decodeURIComponentSafe).filter((s) => s.length >= 4);
  } catch {
    return [];
  }
}

/** `300 ms`, `2 s`, `1.5 s`. */
export function seconds(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  return `${Number.isInteger(s) ? s : s.toFixed(1)} s`;
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
