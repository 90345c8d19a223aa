/**
 * Proof that an answer in the page's address bar (`&answer=allow&request=<id>`) comes from a tap on our
 * own notification, not from a link someone sent: the worker, when it opens the page for an Allow /
 * Deny, leaves a one-time token in the origin's Cache Storage (which no other site can write) and puts
 * its name in the URL (`&tap=<token>`); the page answers only when the token is there, names the same
 * request and answer, is recent, and it deletes it. A link without one only shows the prompt's card.
 */
const CACHE = 'remote-assistant-taps';
/** A tap is answered by the page it opens within this time, or not at all. */
const MAX_AGE_MS = 10 * 60_000;

interface Tap {
  request_id: string;
  answer: 'allow' | 'deny';
  at: number;
}

const keyOf = (scope: string, token: string) => new URL(`__tap/${encodeURIComponent(token)}`, scope).href;

/** The worker: records a tap; returns the token for the URL. */
export async function recordTap(scope: string, requestId: string, answer: 'allow' | 'deny'): Promise<string> {
  const token = crypto.randomUUID();
  const tap: Tap = { request_id: requestId, answer, at: Date.now() };
  const cache = await caches.open(CACHE);
  await cache.put(keyOf(scope, token), new Response(JSON.stringify(tap), { headers: { 'content-type': 'application/json' } }));
  return token;
}

/** The page: whether `token` proves this answer; the token is spent either way. */
export async function redeemTap(scope: string, token: string, requestId: string, answer: 'allow' | 'deny'): Promise<boolean> {
  if (typeof caches === 'undefined') return false;
  try {
    const cache = await caches.open(CACHE);
    const key = keyOf(scope, token);
    const stored = await cache.match(key);
    if (!stored) return false;
    await cache.delete(key);
    const tap = (await stored.json()) as Partial<Tap>;
    return tap.request_id === requestId && tap.answer === answer && typeof tap.at === 'number' && Date.now() - tap.at < MAX_AGE_MS;
  } catch {
    return false;
  }
}
