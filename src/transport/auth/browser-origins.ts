import { loginLimitKey } from '../http/allow-from';
import type { LimitAddress } from './login-failures';

/** Origins remembered as having signed in (most recent kept); one more forgets the oldest. */
export const MAX_SIGNED_IN_ORIGINS = 32;

/**
 * What a LAN WebSocket's failed logins count against (login-failures.ts). Any web page the person opens
 * can make its browser open a WebSocket to the service (ws://127.0.0.1:5000/ws, a LAN address) and send
 * wrong tokens: counted against the address itself, ten of them locked out every client of that address,
 * the editor windows that attach over loopback and the CLI included. A browser always says which page
 * opened the socket (`Origin`, which no page can forge), so such a socket counts apart:
 * - under its own origin, when a socket of that origin signed in here before (the phone page, wherever
 *   it is served from): a page of another site cannot lock it out;
 * - else with every other origin not seen to sign in, of that address (a site that makes up origins by
 *   the thousand still fills one count, and the limiter holds at most MAX_SIGNED_IN_ORIGINS more keys
 *   an address).
 * A socket without `Origin` (not a browser: an editor window, the CLI, a script) counts against its
 * address as before. Browser origins need no stronger guard: a WebSocket `auth` takes only random
 * tokens and secrets, never a password, and `POST /auth` (passwords) is counted by address alone.
 * A script (not a browser) can send any `Origin` it likes: all the buckets of one address together
 * take at most WEB_FAILURE_LIMIT failures a window (3 x one bucket's), then every browser bucket of
 * that address waits, while its clients without `Origin` still get in.
 * Opaque origins (`null`: a sandboxed frame, a file) are never remembered: every such page shares them.
 */
export class SignedInOrigins {
  private readonly origins = new Set<string>();

  limitKey(address: string, origin: string | undefined): LimitAddress {
    if (origin === undefined) return address;
    const key = loginLimitKey(address);
    return { bucket: this.origins.has(origin) ? `web ${origin} ${key}` : `web ${key}`, address };
  }

  /** A socket of `origin` signed in: its failures count under it from now on. */
  signedIn(origin: string | undefined): void {
    if (origin === undefined || origin === 'null') return;
    this.origins.delete(origin);
    this.origins.add(origin);
    if (this.origins.size > MAX_SIGNED_IN_ORIGINS) this.origins.delete(this.origins.values().next().value!);
  }
}

/** The `Origin` header of an upgrade, as one string (a browser sends exactly one); undefined without one. */
export function originOf(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header.join(',') : header;
  return value === undefined ? undefined : value.trim().toLowerCase();
}
