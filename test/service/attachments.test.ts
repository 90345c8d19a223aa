// Show it a picture or a file (issue 14): uploads in chunks through the protocol, stored as blobs with
// their hash checked, images (by their bytes) given to vision models in each provider's format, other
// files saved into the workspace and named by path; every bad upload a clear error with nothing stored.
import assert from 'node:assert/strict';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ATTACHMENT_CHUNK_BYTES, MAX_ATTACHMENT_BYTES, MAX_UPLOAD_BYTES_PER_USER } from '../../src/protocol';
import { hashPassword } from '../../src/transport/auth/passwords';
import { downloadAttachment, pngLike, sha256, uploadAttachment } from '../helpers/attachments';
import { startFakeAnthropic, type FakeAnthropic } from '../helpers/fake-anthropic';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { serve } from '../helpers/cli';
import { sessionClient, startService, TEST_TOKEN, writeConfig, type RunningService } from '../helpers/service';
import { tempDir, waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';
import { isServiceNote, withoutNote } from '../helpers/service-note';

const PASSWORD = 'correct horse battery staple';
let openai: FakeOpenAI;
let anthropic: FakeAnthropic;
let workspace: { dir: string; cleanup: () => Promise<void> };
let svc: RunningService;
let owner: TestClient;
let user: TestClient;

before(async () => {
  openai = await startFakeOpenAI();
  anthropic = await startFakeAnthropic();
  workspace = await tempDir('ra-attach-ws-');
  svc = await startService(
    {
      provider: 'openai',
      model: 'gpt-4o-mini',
      base_url: openai.url,
      workspace: workspace.dir,
      users: [{ username: 'ada', password_hash: await hashPassword(PASSWORD) }],
      vision_models: { 'text-only-model': false },
    },
    { uploadIdleTimeoutMs: 400 },
  );
  owner = await TestClient.authed(svc.wsUrl, svc.token);
  user = await sessionClient(svc, 'ada', PASSWORD);
});

after(async () => {
  owner?.close();
  user?.close();
  await svc?.dispose();
  await openai?.close();
  await anthropic?.close();
  await workspace?.cleanup();
});

const ownerRequest = (frame: Record<string, unknown>) => owner.request(frame);
const lastCompletion = (fake: FakeOpenAI | FakeAnthropic) => [...fake.requests].reverse().find((r) => r.method === 'POST')!.body;
const errorOf = (reply: Record<string, unknown>) => ({ status: reply.status, code: reply.code });

async function setConfig(config: Record<string, unknown>): Promise<void> {
  const reply = await owner.request({ type: 'update_config', config });
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
}

describe('upload and vision', () => {
  test('an image (told by its bytes, not its claimed type) crosses in chunks, is stored byte for byte and reaches OpenAI as an image_url part', async () => {
    const bytes = pngLike(2 * ATTACHMENT_CHUNK_BYTES + 1234);
    const ended = await uploadAttachment(ownerRequest, bytes, 'screenshot.bin', 'application/octet-stream');
    assert.equal(ended.status, 'ok', JSON.stringify(ended));
    const info = ended.data as { attachment_id: string; kind: string; mime: string; size: number; name: string };
    assert.deepEqual({ kind: info.kind, mime: info.mime, size: info.size, name: info.name }, { kind: 'image', mime: 'image/png', size: bytes.length, name: 'screenshot.bin' });
    assert.ok((await svc.service.store.blobs.get(sha256(bytes)))?.equals(bytes), 'stored as a blob under its hash');

    const chat = await owner.request({ type: 'chat', message: 'what is on this screenshot?', attachments: [info.attachment_id] });
    assert.equal(chat.status, 'ok', JSON.stringify(chat));
    const user = withoutNote(lastCompletion(openai).messages as { role: string; content: unknown }[])
      .filter((m) => m.role === 'user')
      .pop()!;
    assert.ok(Array.isArray(user.content), 'the user turn is a list of parts');
    const parts = user.content as { type: string; text?: string; image_url?: { url: string } }[];
    assert.deepEqual(parts[0], { type: 'text', text: 'what is on this screenshot?' });
    assert.equal(parts[1].type, 'image_url');
    assert.equal(parts[1].image_url!.url, `data:image/png;base64,${bytes.toString('base64')}`);

    // The message shows its attachment, from history too, and it reads back in chunks.
    const conversationId = (chat.data as { conversation_id: string }).conversation_id;
    const history = await owner.request({ type: 'get_messages', conversation_id: conversationId });
    const [first] = (history.data as { messages: { attachments?: unknown[] }[] }).messages;
    assert.deepEqual(first.attachments, [{ attachment_id: info.attachment_id, name: 'screenshot.bin', mime: 'image/png', kind: 'image', size: bytes.length }]);
    assert.ok((await downloadAttachment(ownerRequest, info.attachment_id)).equals(bytes));
  });

  test('Anthropic receives the image as an image block with a base64 source', async () => {
    await setConfig({ provider: 'anthropic', base_url: anthropic.url, model: 'claude-sonnet-4-6' });
    try {
      const bytes = pngLike(5000);
      const ended = await uploadAttachment(ownerRequest, bytes, 'photo.png', 'image/png');
      const chat = await owner.request({ type: 'chat', message: 'describe it', attachments: [(ended.data as { attachment_id: string }).attachment_id] });
      assert.equal(chat.status, 'ok', JSON.stringify(chat));
      const turn = (lastCompletion(anthropic).messages as { role: string; content: unknown }[]).pop()!;
      const [text, image, note] = turn.content as { type: string; text?: string }[];
      assert.deepEqual(
        [text, image],
        [
          { type: 'text', text: 'describe it' },
          // The last block before the turn's note: where the prompt cache's mark goes.
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: bytes.toString('base64') }, cache_control: { type: 'ephemeral' } },
        ],
      );
      assert.ok(note?.type === 'text' && isServiceNote(note.text), "then the turn's note");
    } finally {
      await setConfig({ provider: 'openai', base_url: openai.url, model: 'gpt-4o-mini' });
    }
  });

  test('a file (and an image for a model without vision) is saved inside the workspace under a safe name and named by path', async () => {
    await setConfig({ model: 'text-only-model' });
    try {
      const text = Buffer.from('name,amount\nada,3\n');
      const file = await uploadAttachment(ownerRequest, text, '../../../etc/passwd.csv', 'text/csv');
      const image = await uploadAttachment(ownerRequest, pngLike(3000), 'chart.png', 'image/png');
      const ids = [file, image].map((r) => (r.data as { attachment_id: string }).attachment_id);
      const chat = await owner.request({ type: 'chat', message: 'sum the amounts', attachments: ids });
      assert.equal(chat.status, 'ok', JSON.stringify(chat));
      const user = withoutNote(lastCompletion(openai).messages as { role: string; content: unknown }[])
        .filter((m) => m.role === 'user')
        .pop()!;
      assert.equal(typeof user.content, 'string', 'no image part for a model without vision');
      const saved = await readdir(join(workspace.dir, '.remote-assistant', 'attachments'));
      const csv = saved.find((name) => name.endsWith('-passwd.csv'))!;
      assert.ok(csv, `saved: ${saved.join(', ')}`);
      assert.ok((user.content as string).includes(`.remote-assistant/attachments/${csv}`), user.content as string);
      assert.ok(saved.some((name) => name.endsWith('-chart.png')));
      assert.ok((await readFile(join(workspace.dir, '.remote-assistant', 'attachments', csv))).equals(text));
    } finally {
      await setConfig({ model: 'gpt-4o-mini' });
    }
  });
});

test('an image the agent reads (read_file) is kept as an attachment of its tool result: tool.result and get_messages carry it, and clients read it', async () => {
  const picture = pngLike(4000);
  await writeFile(join(workspace.dir, 'diagram.png'), picture);
  await setConfig({ permission_mode: 'allow' });
  try {
    openai.script({ tool_calls: [{ name: 'read_file', arguments: { path: 'diagram.png' } }] }, { text: 'it is a diagram' });
    const chat = await owner.request({ type: 'chat', id: 'reads-image', message: 'open diagram.png' });
    assert.equal(chat.status, 'ok', JSON.stringify(chat));
    const result = owner.frames.find((f) => f.event === 'tool.result' && f.id === 'reads-image') as
      { ok: boolean; attachments?: { attachment_id: string; kind: string; mime: string; name: string }[] } | undefined;
    assert.ok(result?.ok, JSON.stringify(result));
    assert.equal(result.attachments?.length, 1, 'the tool.result event names the image');
    const [shown] = result.attachments!;
    assert.deepEqual({ kind: shown.kind, mime: shown.mime, name: shown.name }, { kind: 'image', mime: 'image/png', name: 'diagram.png' });
    const toolMessages = (lastCompletion(openai).messages as { role: string; content: string }[]).filter((m) => m.role === 'tool');
    assert.match(toolMessages.at(-1)!.content, /diagram\.png is an image \(image\/png/);
    // Another user client (a session user) sees it with the conversation, in history and in bytes.
    const conversationId = (chat.data as { conversation_id: string }).conversation_id;
    const history = await user.request({ type: 'get_messages', conversation_id: conversationId, include_tools: true });
    const stored = (history.data as { messages: { tool_kind?: string; attachments?: { attachment_id: string }[] }[] }).messages.find((m) => m.tool_kind === 'result');
    assert.equal(stored?.attachments?.[0].attachment_id, shown.attachment_id);
    assert.ok((await downloadAttachment((f) => user.request(f), shown.attachment_id)).equals(picture));
  } finally {
    await setConfig({ permission_mode: 'ask' });
  }
});

test('an attachment acknowledged by attachment_end survives kill -9 of the service (real CLI): usable in a chat and read back after the restart', async () => {
  const { dir, cleanup } = await tempDir('ra-attach-crash-');
  await writeConfig(dir, { provider: 'openai', model: 'gpt-4o', base_url: openai.url });
  let proc = await serve(dir);
  try {
    const bytes = pngLike(ATTACHMENT_CHUNK_BYTES + 99);
    let client = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, TEST_TOKEN);
    const ended = await uploadAttachment((f) => client.request(f), bytes, 'before-crash.png', 'image/png');
    assert.equal(ended.status, 'ok', JSON.stringify(ended));
    const { attachment_id } = ended.data as { attachment_id: string };
    proc.child.kill('SIGKILL');
    await proc.exited;

    proc = await serve(dir);
    client = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, TEST_TOKEN);
    const chat = await client.request({ type: 'chat', message: 'still there?', attachments: [attachment_id] });
    assert.equal(chat.status, 'ok', JSON.stringify(chat));
    const user = withoutNote(lastCompletion(openai).messages as { role: string; content: { type: string; image_url?: { url: string } }[] }[])
      .filter((m) => m.role === 'user')
      .pop()!;
    assert.equal(user.content[1].image_url?.url, `data:image/png;base64,${bytes.toString('base64')}`);
    assert.ok((await downloadAttachment((f) => client.request(f), attachment_id)).equals(bytes));
    client.close();
  } finally {
    proc.child.kill('SIGKILL');
    await proc.exited;
    await cleanup();
  }
});

describe('bad uploads', () => {
  const begin = async (client: TestClient, bytes: Buffer) => {
    const reply = await client.request({ type: 'attachment_begin', name: 'f.bin', mime: 'application/octet-stream', size: bytes.length, sha256: sha256(bytes) });
    assert.equal(reply.status, 'ok', JSON.stringify(reply));
    return (reply.data as { attachment_id: string }).attachment_id;
  };
  const chunkOf = (bytes: Buffer, index: number) => bytes.subarray(index * ATTACHMENT_CHUNK_BYTES, (index + 1) * ATTACHMENT_CHUNK_BYTES).toString('base64');

  test('out of order, duplicate and missing chunks are refused by name, and the upload carries on from where it was', async () => {
    const bytes = pngLike(2 * ATTACHMENT_CHUNK_BYTES + 10);
    const id = await begin(owner, bytes);
    const skipped = await owner.request({ type: 'attachment_chunk', attachment_id: id, index: 1, data: chunkOf(bytes, 1) });
    assert.deepEqual(errorOf(skipped), { status: 'error', code: 'invalid_request' });
    assert.match(String(skipped.error), /chunk 1 is out of order: send chunk 0 next/);
    assert.equal((await owner.request({ type: 'attachment_chunk', attachment_id: id, index: 0, data: chunkOf(bytes, 0) })).status, 'ok');
    const again = await owner.request({ type: 'attachment_chunk', attachment_id: id, index: 0, data: chunkOf(bytes, 0) });
    assert.match(String(again.error), /chunk 0 was already received: send chunk 1 next/);
    const early = await owner.request({ type: 'attachment_end', attachment_id: id });
    assert.deepEqual(errorOf(early), { status: 'error', code: 'invalid_request' });
    assert.match(String(early.error), /incomplete: 1 of 3 chunks/);
    const short = await owner.request({ type: 'attachment_chunk', attachment_id: id, index: 1, data: 'AAAA' });
    assert.match(String(short.error), /chunk 1 must hold 393216 bytes, not 3/);
    const notBase64 = await owner.request({ type: 'attachment_chunk', attachment_id: id, index: 1, data: '!!!!' });
    assert.match(String(notBase64.error), /not base64/);
    for (const index of [1, 2]) assert.equal((await owner.request({ type: 'attachment_chunk', attachment_id: id, index, data: chunkOf(bytes, index) })).status, 'ok');
    const ended = await owner.request({ type: 'attachment_end', attachment_id: id });
    assert.equal(ended.status, 'ok', JSON.stringify(ended));
  });

  test('a wrong hash drops the upload: nothing is stored and its id is unknown afterwards', async () => {
    const bytes = Buffer.from('the real content');
    const reply = await owner.request({ type: 'attachment_begin', name: 'x.txt', mime: 'text/plain', size: bytes.length, sha256: sha256(Buffer.from('other')) });
    const id = (reply.data as { attachment_id: string }).attachment_id;
    assert.equal((await owner.request({ type: 'attachment_chunk', attachment_id: id, index: 0, data: bytes.toString('base64') })).status, 'ok');
    const ended = await owner.request({ type: 'attachment_end', attachment_id: id });
    assert.deepEqual(errorOf(ended), { status: 'error', code: 'invalid_request' });
    assert.match(String(ended.error), /do not match sha256/);
    assert.equal(await svc.service.store.blobs.has(sha256(bytes)), false, 'no blob of the bad upload');
    assert.equal(svc.service.store.attachments.get(id), undefined);
    assert.deepEqual(errorOf(await owner.request({ type: 'attachment_end', attachment_id: id })), { status: 'error', code: 'not_found' });
    const chat = await owner.request({ type: 'chat', message: 'use it', attachments: [id] });
    assert.deepEqual(errorOf(chat), { status: 'error', code: 'not_found' });
  });

  test('unknown ids, sizes over the limits, malformed fields: clear errors', async () => {
    assert.deepEqual(errorOf(await owner.request({ type: 'attachment_chunk', attachment_id: 'no-such-upload', index: 0, data: 'AAAA' })), { status: 'error', code: 'not_found' });
    assert.deepEqual(errorOf(await owner.request({ type: 'get_attachment', attachment_id: 'no-such-attachment' })), { status: 'error', code: 'not_found' });
    const big = await owner.request({ type: 'attachment_begin', name: 'huge.iso', mime: 'application/octet-stream', size: MAX_ATTACHMENT_BYTES + 1, sha256: sha256(Buffer.from('x')) });
    assert.deepEqual(errorOf(big), { status: 'error', code: 'payload_too_large' });
    assert.match(String(big.error), /at most 25 MiB/);
    const bad = await owner.request({ type: 'attachment_begin', name: '', mime: 'nonsense', size: 0, sha256: 'abc' });
    assert.deepEqual(errorOf(bad), { status: 'error', code: 'invalid_request' });
    assert.match(String(bad.error), /name/);
    // In flight per user: the declared sizes of unfinished uploads add up.
    const ids: string[] = [];
    const declared = { type: 'attachment_begin', name: 'part', mime: 'application/octet-stream', size: MAX_ATTACHMENT_BYTES, sha256: sha256(Buffer.from('x')) };
    for (let n = 0; n < Math.floor(MAX_UPLOAD_BYTES_PER_USER / MAX_ATTACHMENT_BYTES); n++) ids.push(((await owner.request(declared)).data as { attachment_id: string }).attachment_id);
    const over = await owner.request(declared);
    assert.deepEqual(errorOf(over), { status: 'error', code: 'rate_limited' });
    // Another user is not held back by the owner's uploads.
    assert.equal((await user.request(declared)).status, 'ok');
    const empty = await owner.request({ type: 'chat', message: '' });
    assert.deepEqual(errorOf(empty), { status: 'error', code: 'invalid_request' });
    // Unfinished uploads expire (400 ms here) and free their share.
    await waitFor(async () => (await owner.request({ type: 'attachment_chunk', attachment_id: ids[0], index: 0, data: 'AAAA' })).code === 'not_found', 'the idle upload to expire');
    assert.equal((await owner.request(declared)).status, 'ok');
  });

  test('a webhook account (a session of the webhook channel) may not upload: unauthorized', async () => {
    const webhook = { id: 'webhook-session', source: { kind: 'webhook' as const, account: 'crm' }, canAnswerPermissions: false, send: () => undefined };
    const bytes = Buffer.from('from a webhook');
    const reply = await svc.service.dispatch({ type: 'attachment_begin', name: 'x.txt', mime: 'text/plain', size: bytes.length, sha256: sha256(bytes) }, webhook);
    assert.deepEqual({ status: reply.status, code: (reply as { code?: string }).code }, { status: 'error', code: 'unauthorized' });
  });

  test("a session user cannot touch the owner's upload or unsent attachment, but reads one a conversation shows", async () => {
    const bytes = pngLike(700);
    const id = await begin(owner, bytes);
    assert.deepEqual(errorOf(await user.request({ type: 'attachment_chunk', attachment_id: id, index: 0, data: bytes.toString('base64') })), { status: 'error', code: 'not_found' });
    assert.equal((await owner.request({ type: 'attachment_chunk', attachment_id: id, index: 0, data: bytes.toString('base64') })).status, 'ok');
    assert.equal((await owner.request({ type: 'attachment_end', attachment_id: id })).status, 'ok');
    assert.deepEqual(errorOf(await user.request({ type: 'get_attachment', attachment_id: id })), { status: 'error', code: 'not_found' });
    const stolen = await user.request({ type: 'chat', message: 'mine now', attachments: [id] });
    assert.deepEqual(errorOf(stolen), { status: 'error', code: 'not_found' });
    const chat = await owner.request({ type: 'chat', message: 'look', attachments: [id] });
    assert.equal(chat.status, 'ok');
    assert.ok((await downloadAttachment((f) => user.request(f), id)).equals(bytes), 'visible with its conversation');
  });
});
