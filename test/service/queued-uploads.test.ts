// A message waiting in line keeps its files (s35, queue35; docs/design.md "What the phone keeps of a message
// not sent yet"). The service keeps a person's newest MAX_UNSENT_ATTACHMENTS unsent uploads (s33, probe33); a
// chat accepted behind a running turn is stored (and its files bound) only when its turn comes, so newer uploads
// meanwhile pushed its files out: its turn told the model "[Attached plan.txt: no longer available]" and the
// stored message named a file gone. Now a file a waiting chat names is held: it keeps its place in the bound
// and is never the one pushed out; when the person's waiting messages hold the whole bound, a new upload is
// refused (rate_limited) before anything is lost. The bound stays per person (unsent-uploads.test.ts).
// Real sockets, a real data directory, the fake provider holding the first turn open.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { MAX_ATTACHMENTS_PER_MESSAGE, MAX_UNSENT_ATTACHMENTS } from '../../src/protocol';
import { uploadAttachment, waitQueued } from '../helpers/attachments';
import { useService } from '../helpers/service-fixture';
import type { TestClient } from '../helpers/ws-client';

type Frame = Record<string, unknown>;
const svc = useService({ workspace: true, config: { model: 'fake-model' } });

async function upload(client: TestClient, name: string): Promise<Frame> {
  return uploadAttachment((frame) => client.request(frame), Buffer.from(`${name} ${randomUUID()}\n`), name, 'text/plain');
}

async function uploaded(client: TestClient, name: string): Promise<string> {
  const done = await upload(client, name);
  assert.equal(done.status, 'ok', JSON.stringify(done));
  return (done.data as { attachment_id: string }).attachment_id;
}

test('a file a message waiting in line names is not pushed out by newer uploads; a new upload is refused when waiting messages hold the whole bound', async () => {
  const owner = await svc.client();
  const first = await svc.client();
  // A conversation whose next turn the fake holds open: what is sent meanwhile waits in line.
  svc.fake.script({ text: 'Made.' });
  const made = await owner.request({ type: 'chat', message: 'a conversation' });
  const conversationId = (made.data as { conversation_id: string }).conversation_id;
  let open = (): void => undefined;
  const held = new Promise((resolve) => (open = () => resolve(undefined)));
  svc.fake.script({ text: 'a long answer in two chunks', chunks: 2, holdAfterChunks: { chunks: 1, until: held } }, { text: 'Read the plan.' }, { text: 'Read the rest.' });
  const running = first.request({ type: 'chat', conversation_id: conversationId, message: 'a long turn', stream: true }, 30_000);

  const plan = await uploaded(owner, 'plan.txt');
  const waiting = await svc.client();
  const queued = waiting.request({ type: 'chat', conversation_id: conversationId, message: 'see the plan', attachments: [plan], client_message_id: 'queue35-plan' }, 30_000);
  await waitQueued(owner, conversationId, 1);

  // The same person makes the bound's worth of newer uploads while it waits.
  for (let i = 0; i < MAX_UNSENT_ATTACHMENTS; i++) await uploaded(owner, `newer-${i}.txt`);
  const read = await owner.request({ type: 'get_attachment', attachment_id: plan });
  assert.equal(read.status, 'ok', `the waiting message's file is still there: ${JSON.stringify(read)}`);

  // Waiting messages holding the whole bound: a new upload is refused, nothing pushed out.
  const batch: string[] = [];
  for (let i = 0; i < MAX_UNSENT_ATTACHMENTS - 1; i++) batch.push(await uploaded(owner, `batch-${i}.txt`));
  const more = await svc.client();
  const rest = more.request(
    { type: 'chat', conversation_id: conversationId, message: 'the rest', attachments: batch.slice(0, MAX_ATTACHMENTS_PER_MESSAGE), client_message_id: 'queue35-rest' },
    30_000,
  );
  const last = await svc.client();
  const restTwo = last.request(
    { type: 'chat', conversation_id: conversationId, message: 'the rest, two', attachments: batch.slice(MAX_ATTACHMENTS_PER_MESSAGE), client_message_id: 'queue35-rest-2' },
    30_000,
  );
  await waitQueued(owner, conversationId, 3);
  const refused = await upload(owner, 'one-too-many.txt');
  assert.equal(refused.code, 'rate_limited', `refused while waiting messages hold the bound: ${JSON.stringify(refused)}`);
  assert.match(String(refused.error), /wait in queued messages/, 'the refusal says why');
  for (const id of [plan, ...batch]) assert.equal((await owner.request({ type: 'get_attachment', attachment_id: id })).status, 'ok', `${id} kept`);

  open();
  assert.equal((await running).status, 'ok');
  const answered = await queued;
  assert.equal(answered.status, 'ok', JSON.stringify(answered));
  assert.equal((await rest).status, 'ok');
  assert.equal((await restTwo).status, 'ok');
  const asked = JSON.stringify(svc.fake.requests.map((r) => r.body));
  assert.doesNotMatch(asked, /no longer available/, 'the model was given every file');
  assert.match(asked, /plan\.txt/, 'the plan reached the model');
  // Started, they are sent: the person may upload again.
  assert.equal((await upload(owner, 'after.txt')).status, 'ok');
  for (const client of [first, waiting, more, last]) client.close();
});

/**
 * A conversation whose turn the fake holds open, and two chats naming the bound's worth of the owner's files
 * waiting behind it: a new upload of the owner's is refused meanwhile.
 */
async function boundHeldInLine(tag: string) {
  const owner = await svc.client();
  svc.fake.script({ text: 'Made.' });
  const made = await owner.request({ type: 'chat', message: `a conversation ${tag}` });
  const conversationId = (made.data as { conversation_id: string }).conversation_id;
  let open = (): void => undefined;
  const held = new Promise((resolve) => (open = () => resolve(undefined)));
  svc.fake.script({ text: 'a long answer in two chunks', chunks: 2, holdAfterChunks: { chunks: 1, until: held } });
  const clients = [owner, await svc.client(), await svc.client(), await svc.client()];
  const running = clients[1].request({ type: 'chat', conversation_id: conversationId, message: 'a long turn', stream: true }, 30_000);
  const files: string[] = [];
  for (let i = 0; i < MAX_UNSENT_ATTACHMENTS; i++) files.push(await uploaded(owner, `${tag}-${i}.txt`));
  const queued = [0, 1].map((i) =>
    clients[2 + i].request(
      {
        type: 'chat',
        conversation_id: conversationId,
        message: `${tag} part ${i}`,
        attachments: files.slice(i * MAX_ATTACHMENTS_PER_MESSAGE, (i + 1) * MAX_ATTACHMENTS_PER_MESSAGE),
        client_message_id: `${tag}-${i}`,
      },
      30_000,
    ),
  );
  await waitQueued(owner, conversationId, 2);
  assert.equal((await upload(owner, `${tag}-refused.txt`)).code, 'rate_limited', 'the waiting chats hold the whole bound');
  return { owner, conversationId, open, running, queued, clients };
}

test('a waiting chat taken out of the line, or whose conversation is deleted, lets go of its files: the person may upload again', async () => {
  // The chat handler's hold ends when its chat is answered, however (its `finally`): one never answered would
  // leave the person unable to upload anything until a restart.
  const removed = await boundHeldInLine('removed');
  for (const i of [0, 1]) {
    const answer = await removed.owner.request({ type: 'remove_queued', conversation_id: removed.conversationId, client_message_id: `removed-${i}` });
    assert.deepEqual(answer.data, { removed: true });
  }
  for (const answer of await Promise.all(removed.queued)) assert.equal((answer.data as { cancelled?: boolean }).cancelled, true, JSON.stringify(answer));
  assert.equal((await upload(removed.owner, 'after-removal.txt')).status, 'ok', 'the removed chats hold nothing');
  removed.open();
  assert.equal((await removed.running).status, 'ok');

  const deleted = await boundHeldInLine('deleted');
  const gone = await deleted.owner.request({ type: 'delete_conversation', conversation_id: deleted.conversationId });
  assert.equal(gone.status, 'ok', JSON.stringify(gone));
  await Promise.all([deleted.running, ...deleted.queued]);
  assert.equal((await upload(deleted.owner, 'after-deletion.txt')).status, 'ok', 'the chats of a deleted conversation hold nothing');
  deleted.open();
  for (const client of [...removed.clients, ...deleted.clients]) client.close();
});
