// A chat resent (same sender, same client_message_id) after its message's metadata went cold (moved to
// history.db, issue 25) is still recognised: answered from the store, never stored or run a second time.
// Real store in a temp dir, the real resend logic of the chat command.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ChatResends } from '../../src/commands/turns/chat-resends';
import type { ClientSession } from '../../src/commands/session';
import { OWNER_PERSON } from '../../src/protocol/sources';
import type { CommandOf, ResultOf } from '../../src/protocol';
import { clientKeyOf, openStore } from '../../src/store/index';
import type { Store } from '../../src/store/index';
import { tempDir } from '../helpers/temp';

const LIMIT = { timeout: 60_000 };
const session = { id: 'phone-1', source: { kind: 'lan' }, principal: 'access', canAnswerPermissions: true, send: () => {} } as ClientSession;
const chat = (message: string, clientMessageId?: string): CommandOf<'chat'> =>
  ({ type: 'chat', message, ...(clientMessageId === undefined ? {} : { client_message_id: clientMessageId }) }) as CommandOf<'chat'>;

/** A store whose only conversation (a chat with client id `old-1` and its reply) went cold. */
async function coldStore(t: { after: (fn: () => Promise<void>) => void }): Promise<Store> {
  const { dir, cleanup } = await tempDir('cold-resend-test-');
  t.after(cleanup);
  const store = await openStore(dir, { hotMessages: 0 });
  t.after(() => store.close());
  const at = new Date(Date.now() - 3_600_000).toISOString();
  await store.conversations.create({ id: 'c1', title: 'c1', source: 'ws', created_at: at });
  await store.messages.appendMany([
    { id: 'u1', conversation_id: 'c1', role: 'user', content: 'deploy the thing', timestamp: at, client_key: clientKeyOf(OWNER_PERSON, 'old-1') },
    { id: 'a1', conversation_id: 'c1', role: 'assistant', content: 'deployed', timestamp: at },
  ]);
  await store.maintenance.run();
  assert.equal(store.db.get<{ n: number }>('SELECT count(*) AS n FROM messages')?.n, 0, 'the conversation went cold');
  return store;
}

test('a resend of a chat whose message went cold is answered from the store, not stored and run again', LIMIT, async (t) => {
  const store = await coldStore(t);
  // A fresh ChatResends: the service restarted (or 1,000 other chats pushed it out of memory).
  const resends = new ChatResends(store);
  let runs = 0;
  const run = async (): Promise<ResultOf<'chat'>> => {
    runs += 1;
    return { response: 'ran again', conversation_id: 'c1' };
  };
  const result = await resends.once(chat('deploy the thing', 'old-1'), session, run);
  assert.deepEqual(result, { response: 'deployed', conversation_id: 'c1' });
  assert.equal(runs, 0, 'the chat did not run a second time');
  // A different message under the cold id is refused, as for a message in sql.js.
  await assert.rejects(async () => resends.once(chat('something else', 'old-1'), session, run), /client_message_id was already used/);
  assert.equal(runs, 0);
  assert.equal(store.messages.count('c1'), 2, 'nothing stored twice');
});

test('chats start in the order they came while a cold lookup is in flight; a new id runs once', LIMIT, async (t) => {
  const store = await coldStore(t);
  const resends = new ChatResends(store);
  const order: string[] = [];
  const runAs = (name: string) => async (): Promise<ResultOf<'chat'>> => {
    order.push(name);
    return { response: name, conversation_id: 'c1' };
  };
  // The first needs a look in history.db (a new id while cold rows exist); the two after it must not overtake it.
  const first = resends.once(chat('one', 'new-1'), session, runAs('one'));
  const second = resends.once(chat('two'), session, runAs('two'));
  const duplicate = resends.once(chat('one', 'new-1'), session, runAs('one again'));
  const results = await Promise.all([first, second, duplicate]);
  assert.deepEqual(order, ['one', 'two']);
  assert.deepEqual(
    results.map((r) => r.response),
    ['one', 'two', 'one'],
  );
});
