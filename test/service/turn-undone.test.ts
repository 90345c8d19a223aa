// turn.undone (s33, updates33): an undo confirmed from one client is told to every client that may see the
// conversation, with the turn's reply and whether every file it wrote is restored now (list_turn_changes'
// `undone`); a preview tells nothing. Real parts: the service on its socket, the fake provider, files in a
// temp workspace.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { useService } from '../helpers/service-fixture';
import { TestClient } from '../helpers/ws-client';

type Frame = Record<string, unknown>;
const svc = useService({ workspace: true, config: { permission_mode: 'allow' } });

/** A turn that writes `files` (path -> content): its conversation and reply ids. */
async function writingTurn(client: TestClient, files: Record<string, string>): Promise<{ id: string; replyId: string }> {
  svc.fake.script({ tool_calls: Object.entries(files).map(([path, content]) => ({ name: 'write_file', arguments: { path, content } })) }, { text: 'Wrote them.' });
  const answer = await client.request({ type: 'chat', message: 'write files' });
  assert.equal(answer.status, 'ok', JSON.stringify(answer));
  const id = (answer.data as { conversation_id: string }).conversation_id;
  const reply = await client.next(
    (f) => f.event === 'chat.message' && f.conversation_id === id && (f.message as { role: string }).role === 'assistant' && (f.message as { content: string }).content === 'Wrote them.',
  );
  return { id, replyId: (reply.message as { id: string }).id };
}

test('an undo from one client reaches the others as turn.undone (not a webhook account of another); the preview sends nothing', async () => {
  const phone = await TestClient.authed(svc.wsUrl, svc.token);
  const editor = await TestClient.authed(svc.wsUrl, svc.token);
  const heard: Frame[] = [];
  const bot = svc.service.openSession({ source: { kind: 'webhook', account: 'shop' }, canAnswerPermissions: false, send: (event) => void heard.push(event as Frame) });
  try {
    const { id, replyId } = await writingTurn(phone, { 'a.txt': 'a\n' });
    const preview = await editor.request({ type: 'undo_turn', conversation_id: id, message_id: replyId });
    assert.equal(preview.status, 'ok');
    await editor.request({ type: 'get_config' });
    assert.equal(phone.frames.filter((f) => f.event === 'turn.undone').length, 0, 'a preview changes nothing');

    const done = await editor.request({ type: 'undo_turn', conversation_id: id, message_id: replyId, confirm: true });
    assert.equal(done.status, 'ok', JSON.stringify(done));
    await assert.rejects(readFile(join(svc.workspace, 'a.txt')), 'the file the turn made is gone');
    const told = await phone.next((f) => f.event === 'turn.undone');
    const turnId = (done.data as { turn_id: string }).turn_id;
    assert.deepEqual(told, { event: 'turn.undone', conversation_id: id, turn_id: turnId, message_id: replyId, undone: true });
    // The client that undid hears it too (its other pages); the other account's session does not.
    await editor.next((f) => f.event === 'turn.undone' && f.conversation_id === id);
    assert.deepEqual(
      heard.filter((f) => f.event === 'turn.undone'),
      [],
    );
  } finally {
    phone.close();
    editor.close();
    bot.close();
  }
});

test('an undo that restored only some files says undone false, as list_turn_changes does', async () => {
  const phone = await TestClient.authed(svc.wsUrl, svc.token);
  const editor = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const { id, replyId } = await writingTurn(phone, { 'b.txt': 'b\n', 'c.txt': 'c\n' });
    // The person changes one of them afterwards: undo leaves it as it is.
    await writeFile(join(svc.workspace, 'c.txt'), 'edited by the person\n');
    const done = await editor.request({ type: 'undo_turn', conversation_id: id, message_id: replyId, confirm: true });
    assert.equal(done.status, 'ok', JSON.stringify(done));
    const told = await phone.next((f) => f.event === 'turn.undone' && f.conversation_id === id);
    assert.equal(told.undone, false);
    const listed = (await phone.request({ type: 'list_turn_changes', conversation_id: id })).data as { turns: { turn_id: string; undone: boolean }[] };
    assert.equal(listed.turns.find((t) => t.turn_id === told.turn_id)?.undone, false);
  } finally {
    phone.close();
    editor.close();
  }
});
