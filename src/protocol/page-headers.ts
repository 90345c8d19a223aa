/**
 * The HTTP headers every server of the phone page sends with its files (the service on the LAN, the
 * Node relay, the Worker relay), so the page is equally protected wherever it comes from. No import:
 * Node and the Worker both use it.
 */

/** media/phone.html's meta policy, plus what only a header can say: no site may frame the page. */
export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; manifest-src 'self'; connect-src ws: wss:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export const PAGE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': PAGE_CSP,
  // For browsers that ignore frame-ancestors: the page holds a token and pairing secret, so no clickjacking.
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};
