// The chats remembered for resends (commands/turns/chat-resends.ts) are bounded in characters, not only in
// number: a thousand chats of a full frame's text each held a GiB or two (s36). Past the bound the oldest
// settled ones are forgotten (their resends are answered from the store); a chat still running is never.
// Real store in a temp dir, the real resend logic of the chat command.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ChatResends, REMEMBERED_CHARS } from '../../src/commands/turns/chat-resends';
import type { ClientSession } from '../../src/commands/session';
import type { CommandOf, ResultOf } from '../../src/protocol';
import { openStore } from '../../src/store/index';
import { tempDir } from '../helpers/temp';

const session = { id: 'phone-1', source: { kind: 'lan' }, principal: 'access', canAnswerPermissions: true, send: () => {} } as ClientSession;
const chat = (message: string, clientMessageId: string): CommandOf<'chat'> => ({ type: 'chat', message, client_message_id: clientMessageId }) as CommandOf<'chat'>;
const BIG = 1024 * 1024;

test('big chats remembered for resends stay within the character bound; the newest and a running one are still answered from memory', { timeout: 60_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('resend-memory-test-');
  t.after(cleanup);
  const store = await openStore(dir);
  t.after(() => store.close());
  // A remembered answer is given while its conversation exists (unlessDeleted).
  await store.conversations.create({ id: 'c1', title: 'c1', source: 'ws', created_at: new Date().toISOString() });
  const resends = new ChatResends(store);
  let runs = 0;
  const answered = (text: string) => async (): Promise<ResultOf<'chat'>> => {
    runs += 1;
    return { response: text, conversation_id: 'c1' };
  };
  // One chat still waiting for its turn while the big ones come and go.
  let finish: (result: ResultOf<'chat'>) => void = () => undefined;
  const waiting = resends.once(chat('a small one, waiting', 'waiting'), session, () => {
    runs += 1;
    return new Promise((resolve) => (finish = resolve));
  });
  const messages = Array.from({ length: 20 }, (_, i) => `${i}`.padEnd(BIG, '.'));
  for (let i = 0; i < messages.length; i += 1) await resends.once(chat(messages[i]!, `big-${i}`), session, answered(`reply ${i}`));
  assert.equal(runs, 21);
  const { chats, settledChars } = resends.remembered();
  assert.ok(settledChars <= REMEMBERED_CHARS, `${settledChars} characters remembered, at most ${REMEMBERED_CHARS}`);
  assert.ok(chats < 21, `some of the 20 big chats were forgotten (${chats} remembered)`);
  // The newest is answered from memory: nothing runs again.
  assert.deepEqual(await resends.once(chat(messages[19]!, 'big-19'), session, answered('ran again')), { response: 'reply 19', conversation_id: 'c1' });
  // The running one was kept whatever the bound: its resend waits for the same result, and runs nothing.
  const resent = resends.once(chat('a small one, waiting', 'waiting'), session, answered('ran twice'));
  finish({ response: 'the waiting one answered', conversation_id: 'c1' });
  assert.deepEqual(await Promise.all([waiting, resent]), [
    { response: 'the waiting one answered', conversation_id: 'c1' },
    { response: 'the waiting one answered', conversation_id: 'c1' },
  ]);
  assert.equal(runs, 21, 'nothing ran twice');
});
