// Names and keys stored outside a message's body (a webhook sender's user_id, an MCP tool's name) read the same live and after a reopen (review22a: three U+FFFD from sql.js).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStore, type Store } from '../../src/store/index';
import { tempDir } from '../helpers/temp';
import { x25519 } from '@noble/curves/ed25519.js';
import { ClientKeys, registrableClientKey } from '../../src/transport/relay-link/client-keys';
import { displayName } from '../../src/protocol/display-name';
import type { Hello } from '../../src/tunnel';

test("a webhook sender's user_id with a lone surrogate reads the same live and after a reopen", { timeout: 60_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('lone-surrogate-keys-');
  t.after(cleanup);
  let store: Store = await openStore(dir);
  t.after(() => store.close().catch(() => undefined));
  await store.conversations.create({ id: 'c1', title: 'c1', source: 'webhook:a', created_at: new Date(0).toISOString() });
  const message = { id: 'u1', conversation_id: 'c1', role: 'user' as const, content: 'hi', timestamp: new Date(1).toISOString(), user_id: 'user \ud800' };
  await store.messages.append(message);
  const live = (await store.messages.recent('c1')).map((m) => m.user_id);
  await store.close();
  store = await openStore(dir);
  const after = (await store.messages.recent('c1')).map((m) => m.user_id);
  assert.deepEqual(after, live, 'after a reopen');
  assert.equal(message.user_id, after[0], "the caller's message (the history cache's row) as stored");
});

test("a webhook sender's user_id with a lone surrogate, through the inbox: the admitted message holds it well-formed", { timeout: 60_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('lone-surrogate-keys-');
  t.after(cleanup);
  const store = await openStore(dir);
  t.after(() => store.close().catch(() => undefined));
  const accepted = await store.webhooks.accept({
    account: 'a',
    source: 'webhook:a',
    url: 'http://127.0.0.1:9/out',
    newConversation: { id: 'c1', title: 'c1' },
    message: { id: 'u1', content: 'hi', user_id: 'user \ud800' },
    now: Date.now(),
    idempotencyMs: 60_000,
  });
  assert.equal(accepted.kind, 'accepted');
  await store.webhooks.admit('u1');
  assert.deepEqual(
    (await store.messages.recent('c1')).map((m) => m.user_id),
    ['user \ufffd'],
    'one U+FFFD, not the three of the inbox row read back',
  );
});

test("an unrecorded call's tool name (an MCP server's tool, named by the server) reads the same live and after a reopen", { timeout: 60_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('lone-surrogate-keys-');
  t.after(cleanup);
  let store: Store = await openStore(dir);
  t.after(() => store.close().catch(() => undefined));
  await store.conversations.create({ id: 'c1', title: 'c1', source: 'ws', created_at: new Date(0).toISOString() });
  const tool = 'server.lookup\ud800';
  await store.fileChanges.recordUnrecorded({ id: 'u1', conversation_id: 'c1', turn_id: 't1', tool, detail: 'q=1' });
  const live = store.fileChanges.ofTurn('c1', 't1').map((c) => c.tool);
  await store.close();
  store = await openStore(dir);
  assert.deepEqual(live, ['server.lookup\ufffd'], 'stored well-formed, as its detail is (on main: three U+FFFD)');
  assert.deepEqual(
    store.fileChanges.ofTurn('c1', 't1').map((c) => c.tool),
    live,
    'after a reopen',
  );
});

// review22a's finding 8: such a machine kept its old key beside the new one (the row under its old spelling stayed).
test('a machine registered before names were made well-formed is replaced when registered again under the same name', { timeout: 60_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('lone-surrogate-keys-');
  t.after(cleanup);
  const store: Store = await openStore(dir);
  t.after(() => store.close().catch(() => undefined));
  // Before b16bc12 POST /ws/register stored the name as sent (sql.js: the bytes ED A0 80).
  await store.registrations.upsert('laptop \ud800', 'key-old');
  // The same name sent again now reaches the repo through displayName (protocol/http.ts machine_name).
  const { displayName } = await import('../../src/protocol/display-name');
  await store.registrations.upsert(displayName('laptop \ud800'), 'key-new');
  assert.deepEqual(
    store.registrations.keys().map((k) => k.public_key),
    ['key-new'],
    'the earlier key no longer opens the tunnel',
  );
});

test('a registration under a well-formed name replaces only the older spelling of that very name', { timeout: 60_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('lone-surrogate-keys-');
  t.after(cleanup);
  let store: Store = await openStore(dir);
  t.after(() => store.close().catch(() => undefined));
  const { displayName } = await import('../../src/protocol/display-name');
  // Older spellings (as sent before s21), and names that only look alike.
  await store.registrations.upsert('laptop \ud800', 'key-laptop-old');
  await store.registrations.upsert('pad \udc01 \ud83d\ude00', 'key-pad-old');
  await store.registrations.upsert('laptop \ufffd\ufffd\ufffd', 'key-three-replacement-characters');
  await store.registrations.upsert('laptop \ud800\ud800', 'key-two-surrogates-old');
  await store.registrations.upsert(displayName('laptop \ud800'), 'key-laptop-new');
  await store.registrations.upsert(displayName('pad \udc01 \ud83d\ude00'), 'key-pad-new');
  const keys = () =>
    store.registrations
      .keys()
      .map((k) => k.public_key)
      .sort();
  const expected = ['key-laptop-new', 'key-pad-new', 'key-three-replacement-characters', 'key-two-surrogates-old'];
  assert.deepEqual(keys(), expected);
  await store.close();
  store = await openStore(dir);
  assert.deepEqual(keys(), expected, 'after a reopen (the journal replayed)');
});

test('olderSpellingOf: lone surrogates as sql.js stored them, each read as one U+FFFD; other bytes as they are', async () => {
  const { olderSpellingOf } = await import('../../src/store/registrations');
  const hex = (bytes: number[]) => Buffer.from(bytes).toString('hex');
  const ascii = [...Buffer.from('a')];
  assert.equal(olderSpellingOf(hex([...ascii, 0xed, 0xa0, 0x80])), 'a\ufffd', 'a high surrogate');
  assert.equal(olderSpellingOf(hex([0xed, 0xbf, 0xbf, ...ascii])), '\ufffda', 'a low surrogate');
  assert.equal(olderSpellingOf(hex([0xed, 0x9f, 0xbf])), undefined, 'U+D7FF is a character, not a surrogate');
  assert.equal(olderSpellingOf(hex([...Buffer.from('\u{1f600}\ufffd')])), undefined, 'well-formed text holds none');
  assert.equal(olderSpellingOf(hex([...ascii, 0xed, 0xa0])), undefined, 'a cut sequence is not one');
});

// review24a: the older row's e2e v2 mark was dropped with it, so the same key's v1 hellos were let in again.
test('a key that spoke e2e v2 under its older spelling keeps refusing v1 hellos, and its first registration time, once registered again', { timeout: 60_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('lone-surrogate-keys-');
  t.after(cleanup);
  let store: Store = await openStore(dir);
  t.after(() => store.close().catch(() => undefined));
  const key = registrableClientKey(Buffer.from(x25519.getPublicKey(x25519.utils.randomSecretKey())).toString('base64url'))!;
  // As an older build stored it (the name as sent); the phone then spoke v2.
  await store.registrations.upsert('laptop \ud800', key, '2026-01-01T00:00:00.000Z');
  const keys = (s: Store) => new ClientKeys(s, { redeem: () => false } as never, { info() {}, warn() {} } as never);
  await keys(store).spokeV2(key);
  await assert.rejects(keys(store).admit({ version: 1, clientKey: key } as Hello), /v1 hello is refused/, 'refused before');
  // The owner registers the same machine and the same key again (POST /ws/register makes the name well-formed).
  await store.registrations.upsert(displayName('laptop \ud800'), key, '2026-11-28T00:00:00.000Z');
  assert.deepEqual(store.registrations.keys(), [{ public_key: key, e2e_v2: true }], 'one row, still marked');
  assert.equal(store.registrations.get(displayName('laptop \ud800'))?.created_at, '2026-01-01T00:00:00.000Z', 'first registered when the older row was');
  await assert.rejects(keys(store).admit({ version: 1, clientKey: key } as Hello), /v1 hello is refused/, 'refused after');
  await store.close();
  store = await openStore(dir);
  assert.deepEqual(store.registrations.keys(), [{ public_key: key, e2e_v2: true }], 'after a reopen');
});
