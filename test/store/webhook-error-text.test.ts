// A webhook message's failure (the inbox row's error, for the owner) and a delivery's last error are stored
// well-formed, as the inbox's user_id and content are (s22 fix22a): sql.js binds text as UTF-8, which cannot
// hold a lone surrogate, and read one back as three U+FFFD, so the row showed otherwise than the text given
// and than the live copy (s23, polish23).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStore, type Store } from '../../src/store/index';
import { tempDir } from '../helpers/temp';

const LONE = 'receiver said \ud800 and \udc00, pair \ud83d\ude00';
const STORED = 'receiver said \ufffd and \ufffd, pair \ud83d\ude00';

const read = (store: Store) => ({ inbox: store.webhooks.getInbox('m1')?.error, delivery: store.webhooks.getDelivery('d1')?.last_error });

test("a webhook failure's error and a delivery's last error with lone surrogates are stored well-formed, the same after a reopen", { timeout: 60_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('webhook-error-text-');
  t.after(cleanup);
  let store = await openStore(dir);
  t.after(() => store.close().catch(() => undefined));
  const url = 'http://127.0.0.1:9/out';
  const accepted = await store.webhooks.accept({
    account: 'open',
    source: 'webhook:open',
    url,
    newConversation: { id: 'c1', title: 'hello' },
    message: { id: 'm1', content: 'hello' },
    now: 1_000,
    idempotencyMs: 60_000,
  });
  assert.equal(accepted.kind, 'accepted');
  const body = JSON.stringify({ status: 'error', error: LONE, conversation_id: 'c1', message_id: 'm1' });
  await store.webhooks.failWithCallback('m1', LONE, { id: 'd1', account: 'open', url, body, now: 2_000, give_up_ms: 60_000, conversation_id: 'c1' });
  await store.webhooks.recordAttempt('d1', { status: 'pending', url, http_status: 502, error: `HTTP 502: ${LONE}`, next_attempt_ms: 3_000, now: 2_500 });

  const live = read(store);
  assert.deepEqual(live, { inbox: STORED, delivery: `HTTP 502: ${STORED}` });
  await store.close();
  store = await openStore(dir);
  assert.deepEqual(read(store), live, 'after a reopen (the journal replayed)');
});
