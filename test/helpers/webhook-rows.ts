import assert from 'node:assert/strict';
import type { Store } from '../../src/store/index';

/** Where the store tests' deliveries go: a port nothing listens on. */
export const NOWHERE_URL = 'http://127.0.0.1:9/out';

/**
 * A webhook message `message` of `account` accepted into a new conversation `conversation`, then
 * admitted (its turn may run): what the channel's inbox does before a reply is answered.
 */
export async function admittedWebhookMessage(store: Store, ids: { account: string; conversation: string; message: string }, now = Date.now(), url = NOWHERE_URL): Promise<void> {
  const accepted = await store.webhooks.accept({
    account: ids.account,
    source: `webhook:${ids.account}`,
    url,
    newConversation: { id: ids.conversation, title: ids.conversation },
    message: { id: ids.message, content: 'question' },
    now,
    idempotencyMs: 60_000,
  });
  assert.equal(accepted.kind, 'accepted');
  await store.webhooks.admit(ids.message);
}
