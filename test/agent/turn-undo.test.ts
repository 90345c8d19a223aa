import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { serve } from '../helpers/cli';
import { TEST_TOKEN, startService, writeConfig, type RunningService } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

/**
 * Undo a turn (docs/protocol.md, "Undoing a turn"): the real service, the fake provider making real tool
 * calls in a temp workspace, undo_turn over the WebSocket.
 */

let fake: FakeOpenAI;
const cleanups: (() => Promise<void>)[] = [];

before(async () => {
  fake = await startFakeOpenAI();
});
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await fake?.close();
});

async function workspaceDir(): Promise<string> {
  const temp = await tempDir('ra-undo-ws-');
  cleanups.push(temp.cleanup);
  return temp.dir;
}

async function service(workspace: string, options: Parameters<typeof startService>[1] = {}): Promise<RunningService> {
  const svc = await startService({ base_url: fake.url, workspace, permission_mode: 'allow' }, { toolTimeoutMs: 10_000, ...options });
  cleanups.push(() => svc.dispose());
  return svc;
}

type Frame = Record<string, unknown>;
interface UndoFile {
  path: string;
  status: string;
  action: string | null;
  diff: string;
  new_file: boolean;
  before_text?: string | null;
  after_text?: string | null;
  outcome?: string;
}
interface UndoData {
  turn_id: string;
  files: UndoFile[];
  not_reversible: { tool: string; detail: string }[];
  applied: boolean;
}

function ok(reply: Frame): Frame {
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  return reply.data as Frame;
}

/** One chat whose provider makes `calls` (one step each), then answers "done"; returns the conversation and the reply's message id. */
async function turn(client: TestClient, calls: { name: string; arguments: Record<string, unknown> }[], conversationId?: string): Promise<{ conversationId: string; replyId: string }> {
  fake.script(...calls.map((call) => ({ tool_calls: [call] })), { text: 'done' });
  const data = ok(await client.request({ type: 'chat', message: 'do it', ...(conversationId ? { conversation_id: conversationId } : {}) }, 30_000));
  const id = data.conversation_id as string;
  const messages = ok(await client.request({ type: 'get_messages', conversation_id: id, include_tools: true })).messages as { id: string; role: string; ok?: boolean; tool_kind?: string }[];
  const results = messages.filter((m) => m.tool_kind === 'result');
  assert.ok(
    results.slice(-calls.length).every((m) => m.ok === true),
    `every tool call succeeded: ${JSON.stringify(messages)}`,
  );
  const reply = messages.filter((m) => m.role === 'assistant').at(-1)!;
  return { conversationId: id, replyId: reply.id };
}

async function undo(client: TestClient, conversationId: string, messageId: string, confirm = false): Promise<UndoData> {
  return ok(await client.request({ type: 'undo_turn', conversation_id: conversationId, message_id: messageId, ...(confirm ? { confirm: true } : {}) })) as unknown as UndoData;
}

const byPath = (data: UndoData) => new Map(data.files.map((f) => [f.path, f]));
const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Every file under `dir` (relative path -> SHA-256 of its bytes). */
async function snapshot(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = join(entry.parentPath, entry.name);
    out.set(relative(dir, full), sha(await readFile(full)));
  }
  return out;
}

describe('undo a turn', () => {
  test('a turn writes three files and runs a command: the preview shows what will be restored, undo restores the three byte for byte and lists the command as not reversible', async () => {
    const ws = await workspaceDir();
    // Not UTF-8, no newline at the end: restored byte for byte, not as text.
    const binaryBefore = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff, 0xfe, 0x0d, 0x0a, 0x1a]);
    await writeFile(join(ws, 'logo.bin'), binaryBefore);
    await writeFile(join(ws, 'notes.txt'), 'line one\r\nline two\r\nline three');
    const svc = await service(ws);
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    const { conversationId, replyId } = await turn(client, [
      { name: 'write_file', arguments: { path: 'logo.bin', content: 'now text' } },
      { name: 'edit_file', arguments: { path: 'notes.txt', old_string: 'line two', new_string: 'LINE 2' } },
      { name: 'write_file', arguments: { path: 'src/new/created.ts', content: 'export const x = 1;\n' } },
      { name: 'run_command', arguments: { command: 'echo ran > command-output.txt' } },
    ]);
    assert.equal(await readFile(join(ws, 'notes.txt'), 'utf8'), 'line one\r\nLINE 2\r\nline three');

    const preview = await undo(client, conversationId, replyId);
    assert.equal(preview.applied, false);
    const files = byPath(preview);
    assert.deepEqual([...files.keys()].sort(), ['logo.bin', 'notes.txt', 'src/new/created.ts']);
    assert.deepEqual(
      [...files.values()].map((f) => f.status),
      ['will_restore', 'will_restore', 'will_restore'],
    );
    assert.equal(files.get('src/new/created.ts')!.action, 'delete');
    assert.equal(files.get('src/new/created.ts')!.new_file, true);
    assert.equal(files.get('notes.txt')!.action, 'restore');
    assert.match(files.get('notes.txt')!.diff, /-LINE 2\r\n\+line two\r\n/);
    assert.match(files.get('src/new/created.ts')!.diff, /\+\+\+ \/dev\/null[\s\S]*-export const x = 1;/);
    assert.deepEqual(
      preview.not_reversible.map((n) => [n.tool, n.detail]),
      [['run_command', 'echo ran > command-output.txt']],
    );
    // A preview changes nothing.
    assert.equal(await readFile(join(ws, 'logo.bin'), 'utf8'), 'now text');

    const done = await undo(client, conversationId, replyId, true);
    assert.equal(done.applied, true);
    assert.deepEqual(Object.fromEntries(done.files.map((f) => [f.path, f.outcome])), { 'logo.bin': 'restored', 'notes.txt': 'restored', 'src/new/created.ts': 'deleted' });
    assert.deepEqual(await readFile(join(ws, 'logo.bin')), binaryBefore);
    assert.equal(await readFile(join(ws, 'notes.txt'), 'utf8'), 'line one\r\nline two\r\nline three');
    assert.equal(existsSync(join(ws, 'src/new/created.ts')), false);
    assert.equal(await readFile(join(ws, 'command-output.txt'), 'utf8'), 'ran\n', "the command's effect is reported, not guessed at");
    assert.deepEqual(
      done.not_reversible.map((n) => n.tool),
      ['run_command'],
    );

    // Undone once: asking again restores nothing more.
    const again = await undo(client, conversationId, replyId);
    assert.deepEqual(
      again.files.map((f) => f.status),
      ['undone', 'undone', 'undone'],
    );
    client.close();
  });

  test('a file changed after the turn, by the user or by a later turn, is not overwritten: reported as changed since, with the before and after texts for a three-way view', async () => {
    const ws = await workspaceDir();
    await writeFile(join(ws, 'user-edits.txt'), 'original user file\n');
    await writeFile(join(ws, 'later-turn.txt'), 'original later file\n');
    const svc = await service(ws);
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    const first = await turn(client, [
      { name: 'write_file', arguments: { path: 'user-edits.txt', content: 'agent wrote this\n' } },
      { name: 'write_file', arguments: { path: 'later-turn.txt', content: 'agent turn 1\n' } },
      { name: 'write_file', arguments: { path: 'untouched-since.txt', content: 'only turn 1\n' } },
    ]);
    await writeFile(join(ws, 'user-edits.txt'), 'the user changed it\n');
    await turn(client, [{ name: 'edit_file', arguments: { path: 'later-turn.txt', old_string: 'turn 1', new_string: 'turn 2' } }], first.conversationId);

    const preview = byPath(await undo(client, first.conversationId, first.replyId));
    assert.equal(preview.get('user-edits.txt')!.status, 'changed_since');
    assert.equal(preview.get('user-edits.txt')!.before_text, 'original user file\n');
    assert.equal(preview.get('user-edits.txt')!.after_text, 'agent wrote this\n');
    assert.match(preview.get('user-edits.txt')!.diff, /-agent wrote this\n\+the user changed it\n/, 'the diff shows what changed since the turn');
    assert.equal(preview.get('later-turn.txt')!.status, 'changed_since');
    assert.equal(preview.get('untouched-since.txt')!.status, 'will_restore');

    const done = byPath(await undo(client, first.conversationId, first.replyId, true));
    assert.equal(done.get('user-edits.txt')!.outcome, 'skipped');
    assert.equal(done.get('later-turn.txt')!.outcome, 'skipped');
    assert.equal(done.get('untouched-since.txt')!.outcome, 'deleted');
    assert.equal(await readFile(join(ws, 'user-edits.txt'), 'utf8'), 'the user changed it\n');
    assert.equal(await readFile(join(ws, 'later-turn.txt'), 'utf8'), 'agent turn 2\n');
    client.close();
  });

  test('the Roo Code scenario: in a workspace of 100 files a turn touches 2 (one new); undo leaves the other 98 byte-identical and deletes only the new file', async () => {
    const ws = await workspaceDir();
    for (let i = 0; i < 100; i++) {
      const folder = join(ws, `pkg${i % 7}`, i % 2 ? 'src' : 'test');
      await mkdir(folder, { recursive: true });
      await writeFile(join(folder, `file${i}.ts`), `// file ${i}\nexport const value${i} = ${i};\n`);
    }
    await writeFile(join(ws, '.gitignore'), 'node_modules\n');
    const beforeTurn = await snapshot(ws);
    const svc = await service(ws);
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    const { conversationId, replyId } = await turn(client, [
      { name: 'edit_file', arguments: { path: 'pkg3/src/file3.ts', old_string: '= 3;', new_string: '= 33;' } },
      { name: 'write_file', arguments: { path: 'pkg3/src/added.ts', content: 'export const added = true;\n' } },
    ]);
    assert.notDeepEqual(await snapshot(ws), beforeTurn);

    const preview = await undo(client, conversationId, replyId);
    assert.deepEqual(preview.files.map((f) => [f.path, f.action]).sort(), [
      ['pkg3/src/added.ts', 'delete'],
      ['pkg3/src/file3.ts', 'restore'],
    ]);
    await undo(client, conversationId, replyId, true);
    assert.deepEqual(await snapshot(ws), beforeTurn, 'every file as before the turn, none missing, none added');
    client.close();
  });

  test('a model-chosen path with a lone surrogate is refused by the file tools before anything is written: no file, no change to undo', async () => {
    // No file name holds a lone surrogate as the same text: Node writes U+FFFD's bytes, sql.js stores the
    // path's row as three U+FFFD, so an undo would name neither what was asked nor what was written.
    const ws = await workspaceDir();
    await writeFile(join(ws, 'kept.txt'), 'before');
    const svc = await service(ws);
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    fake.script(
      { tool_calls: [{ name: 'write_file', arguments: { path: 'lone\ud800.txt', content: 'x' } }] },
      { tool_calls: [{ name: 'edit_file', arguments: { path: 'kept\udc00.txt', old_string: 'before', new_string: 'after' } }] },
      { tool_calls: [{ name: 'write_file', arguments: { path: 'whole \ud83d\ude00.txt', content: 'pair' } }] },
      { text: 'done' },
    );
    const id = ok(await client.request({ type: 'chat', message: 'do it' }, 30_000)).conversation_id as string;
    const messages = ok(await client.request({ type: 'get_messages', conversation_id: id, include_tools: true })).messages as {
      id: string;
      role: string;
      content: string;
      ok?: boolean;
      tool_kind?: string;
    }[];
    const results = messages.filter((m) => m.tool_kind === 'result');
    assert.deepEqual(
      results.map((m) => m.ok),
      [false, false, true],
      JSON.stringify(results),
    );
    for (const refused of results.slice(0, 2)) assert.match(refused.content, /lone UTF-16 surrogate/);
    assert.deepEqual([...(await snapshot(ws)).keys()].sort(), ['kept.txt', 'whole \ud83d\ude00.txt'], 'nothing written for the refused paths; a whole pair is a character');
    const replyId = messages.filter((m) => m.role === 'assistant').at(-1)!.id;
    assert.deepEqual(
      (await undo(client, id, replyId)).files.map((f) => f.path),
      ['whole \ud83d\ude00.txt'],
    );
    client.close();
  });

  test('list_turn_changes names the turns that changed files, by their reply; a message that is not of the conversation is not_found', async () => {
    const ws = await workspaceDir();
    const svc = await service(ws);
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    const first = await turn(client, [{ name: 'write_file', arguments: { path: 'a.txt', content: 'a' } }]);
    await turn(client, [{ name: 'read_file', arguments: { path: 'a.txt' } }], first.conversationId);
    const listed = ok(await client.request({ type: 'list_turn_changes', conversation_id: first.conversationId })).turns as Frame[];
    assert.deepEqual(
      listed.map((t) => [t.message_id, t.files, t.not_reversible, t.undone]),
      [[first.replyId, 1, 0, false]],
    );

    const missing = await client.request({ type: 'undo_turn', conversation_id: first.conversationId, message_id: 'no-such-message' });
    assert.equal(missing.status, 'error');
    assert.equal(missing.code, 'not_found');
    const bad = await client.request({ type: 'undo_turn', conversation_id: first.conversationId });
    assert.equal(bad.code, 'invalid_request');

    // Deleting the conversation deletes its undo records with it.
    ok(await client.request({ type: 'delete_conversation', conversation_id: first.conversationId }));
    assert.deepEqual(svc.service.store.fileChanges.turns(first.conversationId), []);
    client.close();
  });
});

describe('undo records survive kill -9', () => {
  // The service (dist/cli.js) in a child process kills itself with SIGKILL at a fault point of the write
  // step (RA_TEST_FAULT_FILE_CHANGE, read only there): after a restart the write and its record are both
  // there or neither is.
  const cases = [
    { point: 'after-blobs' },
    { point: 'after-pending' },
    { point: 'after-write' },
    // The file holds neither the old nor the new bytes at the restart (someone wrote it meanwhile): kept as changed, never overwritten.
    { point: 'after-write', editedBeforeRestart: true },
  ];
  for (const { point, editedBeforeRestart } of cases) {
    test(`killed ${point}${editedBeforeRestart ? ', the file edited before the restart' : ''}: after the restart the file and its undo record agree`, async () => {
      const ws = await workspaceDir();
      await writeFile(join(ws, 'target.txt'), 'before the crash\n');
      const data = await tempDir('ra-undo-data-');
      cleanups.push(data.cleanup);
      await writeConfig(data.dir, { base_url: fake.url, workspace: ws, permission_mode: 'allow' });
      const child = await serve(data.dir, 0, { RA_TEST_FAULT_FILE_CHANGE: point });
      cleanups.push(async () => void child.child.kill('SIGKILL'));
      const client = await TestClient.authed(`ws://127.0.0.1:${child.port}/ws`, TEST_TOKEN);
      // The child dies during its first step: nothing more is scripted, so nothing is left for the next test.
      fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'target.txt', content: 'written by the agent\n' } }] });
      void client.request({ type: 'chat', message: 'write it' }, 30_000).catch(() => undefined);
      assert.equal((await child.exited).signal, 'SIGKILL', child.output());
      client.close();
      if (editedBeforeRestart) await writeFile(join(ws, 'target.txt'), 'edited while the service was down\n');

      const svc = await startService({}, { dataDir: data.dir, keepConfig: true });
      cleanups.push(() => svc.stop());
      const admin = await TestClient.authed(svc.wsUrl, svc.token);
      const [conversation] = ok(await admin.request({ type: 'list_conversations' })).conversations as { id: string }[];
      const messages = ok(await admin.request({ type: 'get_messages', conversation_id: conversation.id })).messages as { id: string; role: string }[];
      const userMessage = messages.find((m) => m.role === 'user')!;
      const preview = await undo(admin, conversation.id, userMessage.id);
      const onDisk = await readFile(join(ws, 'target.txt'), 'utf8');
      if (editedBeforeRestart) {
        assert.deepEqual(
          preview.files.map((f) => [f.path, f.status]),
          [['target.txt', 'changed_since']],
        );
        const done = await undo(admin, conversation.id, userMessage.id, true);
        assert.equal(done.files[0].outcome, 'skipped');
        assert.equal(await readFile(join(ws, 'target.txt'), 'utf8'), 'edited while the service was down\n');
      } else if (point === 'after-write') {
        assert.equal(onDisk, 'written by the agent\n');
        assert.deepEqual(
          preview.files.map((f) => [f.path, f.status]),
          [['target.txt', 'will_restore']],
          'the write is on disk, so its record is kept',
        );
        await undo(admin, conversation.id, userMessage.id, true);
        assert.equal(await readFile(join(ws, 'target.txt'), 'utf8'), 'before the crash\n');
      } else {
        assert.equal(onDisk, 'before the crash\n');
        assert.deepEqual(preview.files, [], 'no write, so no record');
      }
      admin.close();
    });
  }
});
