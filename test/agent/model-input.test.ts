// withAttachments (agent/attachments/model-input.ts): a conversation whose messages carry no
// attachment passes through without a promise per message (issue 25); one that has some keeps every
// message in its place and turns only those into images or notes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withAttachments } from '../../src/agent/attachments/model-input';
import type { StoredAttachment } from '../../src/agent/attachments/content';
import type { ChatMessage } from '../../src/agent/providers/types';
import { nullLogger } from '../../src/log/logger';

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0]);
const image: StoredAttachment = { attachment_id: 'a1', name: 'shot.png', mime: 'image/png', kind: 'image', size: PNG.length, hash: 'h-png' };
const gone: StoredAttachment = { attachment_id: 'a2', name: 'old.txt', mime: 'text/plain', kind: 'file', size: 3, hash: 'h-gone' };
/** Blobs by hash: only the image is still stored. */
const deps = { blobs: { get: async (hash: string) => (hash === image.hash ? PNG : undefined) }, workspaceRoots: () => [], logger: nullLogger };

test('messages without attachments come back as they are, the same array (read only: the request is made from it, no copy a step)', async () => {
  const messages: ChatMessage[] = [
    { role: 'system', content: 'system' },
    { role: 'user', content: 'hello' },
    { role: 'assistant', content: 'hi', tool_calls: [{ id: 'c1', name: 'read_file', arguments: { path: 'a' } }] },
    { role: 'tool', tool_call_id: 'c1', name: 'read_file', content: 'text' },
    { role: 'user', content: 'empty list', attachments: [] },
  ];
  const out = await withAttachments(messages, true, deps);
  assert.equal(out, messages, 'not copied');
});

test('with attachments, every message keeps its place; only the attached ones change', async () => {
  const messages: ChatMessage[] = [
    { role: 'user', content: 'look', attachments: [image] },
    { role: 'assistant', content: 'seen' },
    { role: 'user', content: 'and this', attachments: [gone] },
    { role: 'user', content: 'last' },
  ];
  const out = await withAttachments(messages, true, deps);
  assert.deepEqual(out[0], { role: 'user', content: 'look', images: [{ mime: 'image/png', base64: PNG.toString('base64') }] });
  assert.equal(out[1], messages[1]);
  assert.deepEqual(out[2], { role: 'user', content: 'and this\n\n[Attached old.txt: no longer available]' });
  assert.equal(out[3], messages[3]);
});
